"""Typed keys for host state in a tool's context: one name and type per entry, read back
typed, a wrong or missing entry read as None (tools tolerate a missing entry)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import reasonix.app
from reasonix.agent.agent import Agent
from reasonix.agent.compaction import PLAN_STATE_KEY
from reasonix.agent.progress import LEDGER_KEY, ProgressLedger
from reasonix.agent.todo import TODO_KEY, TodoState
from reasonix.control.controller import Controller, Options
from reasonix.control.goal import GOAL_KEY
from reasonix.control.plan import PLAN_KEY
from reasonix.control.todo_tools import STEP_BASELINE, STEP_CALLBACK
from reasonix.safety.checkpoints import CHECKPOINTS_KEY, CheckpointManager
from reasonix.testing import ScriptedProvider
from reasonix.tools.state import StateKey


def test_a_key_reads_back_what_was_set_and_tolerates_the_rest(tmp_path: Path) -> None:
    state: dict[str, Any] = {}
    assert CHECKPOINTS_KEY.get(state) is None
    manager = CheckpointManager(tmp_path)
    CHECKPOINTS_KEY.set(state, manager)
    assert state == {"checkpoints": manager}  # plain string names: user tools may read them
    assert CHECKPOINTS_KEY.get(state) is manager
    state["checkpoints"] = "not a manager"
    assert CHECKPOINTS_KEY.get(state) is None
    assert not CHECKPOINTS_KEY.present(state)
    assert CHECKPOINTS_KEY.pop(state) is None
    assert "checkpoints" not in state


def test_pop_returns_and_removes() -> None:
    key = StateKey("n", int)
    state: dict[str, Any] = {"n": 3}
    assert key.present(state)
    assert key.pop(state) == 3
    assert state == {}
    assert key.pop(state) is None
    assert repr(key) == "StateKey('n', int)"


def test_a_callable_entry_is_kept_unchecked() -> None:
    calls: list[tuple[str, bool, str]] = []
    state: dict[str, Any] = {}
    STEP_CALLBACK.set(state, lambda step, ok, why: calls.append((step, ok, why)))
    callback = STEP_CALLBACK.get(state)
    assert callback is not None
    callback("1", True, "")
    assert calls == [("1", True, "")]


def test_the_agent_hands_its_tools_its_todo_list_and_ledger(tmp_path: Path) -> None:
    agent = Agent(ScriptedProvider([]))
    assert isinstance(TODO_KEY.get(agent.tool_state), TodoState)
    assert TODO_KEY.get(agent.tool_state) is agent.todo_state
    assert isinstance(LEDGER_KEY.get(agent.tool_state), ProgressLedger)
    assert STEP_BASELINE.get(agent.tool_state) is None
    assert PLAN_KEY.get(agent.tool_state) is None
    keys: list[StateKey[Any]] = [
        TODO_KEY,
        LEDGER_KEY,
        STEP_BASELINE,
        STEP_CALLBACK,
        PLAN_KEY,
        PLAN_STATE_KEY,
        CHECKPOINTS_KEY,
    ]
    assert len({k.name for k in keys}) == len(keys)  # no two entries share a name


def test_host_objects_are_given_at_construction(tmp_path: Path) -> None:
    """The host's objects reach the executor's tools through the Controller's options: the
    agent starts with them (and the Controller's goal tracker and step callback) in place."""
    manager = CheckpointManager(tmp_path)
    state: dict[str, Any] = {}
    CHECKPOINTS_KEY.set(state, manager)
    ctrl = Controller(Options(executor_provider=ScriptedProvider([]), executor_state=state))
    tools = ctrl.executor.tool_state
    assert CHECKPOINTS_KEY.get(tools) is manager
    assert GOAL_KEY.get(tools) is ctrl.goal
    assert STEP_CALLBACK.get(tools) is not None
    assert TODO_KEY.get(tools) is ctrl.executor.todo_state
    assert state == {"checkpoints": manager}  # the host's mapping is copied, not filled in
    alone = Agent(ScriptedProvider([]), state=state)
    assert CHECKPOINTS_KEY.get(alone.tool_state) is manager


def test_the_application_layer_never_fills_in_an_agents_tool_state() -> None:
    """app/ hands host objects over when it builds the Controller, never by writing into an
    agent's ``tool_state`` afterwards (reading it to run a tool is fine)."""
    app = Path(reasonix.app.__file__).parent
    writes = re.compile(r"\.(set|pop)\([^)]*tool_state|tool_state\s*\[[^\]]*\]\s*=")
    found = [
        f"{path.name}:{number}: {line.strip()}"
        for path in sorted(app.glob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if writes.search(line)
    ]
    assert found == []
