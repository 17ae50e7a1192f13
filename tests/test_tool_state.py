"""Typed keys for host state in a tool's context: one name and type per entry, read back
typed, a wrong or missing entry read as None (tools tolerate a missing entry)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reasonix.agent.agent import Agent
from reasonix.agent.compaction import PLAN_STATE_KEY
from reasonix.agent.progress import LEDGER_KEY, ProgressLedger
from reasonix.agent.todo import TODO_KEY, TodoState
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
