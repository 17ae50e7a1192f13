"""Compaction that runs when it pays (issue 30): the decision as a pure function (table tests),
and the agent applying it between steps of long scripted sessions (in-process provider, real
tools on real files): it triggers at the step the function predicts, keeps the project
instructions and the todo list byte for byte, elides superseded outputs, accounts what it saved,
and never triggers in a short session or under the window policy."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Literal

import pytest

from reasonix.agent import Agent, AgentOptions
from reasonix.agent.compaction import SUMMARY_INSTRUCTION, SUPERSEDED_NOTE, elide_superseded
from reasonix.agent.economics import EconomicInputs, coming_steps, economic_verdict
from reasonix.agent.todo import TodoItem
from reasonix.events import CollectingSink, CompactionEvent
from reasonix.messages import (
    AssistantMessage,
    ModelRequest,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from reasonix.providers.models import PRESETS, ModelInfo
from reasonix.store import SessionStore
from reasonix.testing import FunctionProvider, Reply
from reasonix.tools.builtin import default_registry
from reasonix.tools.registry import ToolRegistry
from tests.support.sessions import Servers, open_session

FLASH = PRESETS["deepseek-flash"].prices
INSTRUCTIONS = "Project instructions: run `make check` before you report. Never edit vendor/."
SUMMARY = "Goal: read every module.\nFindings: each module defines VALUE.\nNext steps: go on."


def inputs(**kw: float) -> EconomicInputs:
    base: dict[str, float] = {
        "prompt_tokens": 40_000,
        "after_tokens": 4_000,
        "summary_tokens": 800,
        "coming_steps": 60,
        "hit": FLASH.hit,
        "miss": FLASH.miss,
        "output": FLASH.output,
    }
    base.update(kw)
    return EconomicInputs(
        **{k: (v if k in ("hit", "miss", "output") else int(v)) for k, v in base.items()}
    )  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("changes", "compact", "why"),
    [
        ({}, True, "a long history and many steps to come"),
        ({"coming_steps": 3}, False, "only 3 steps expected"),
        ({"prompt_tokens": 3_000}, False, "nothing to gain"),
        ({"prompt_tokens": 9_000, "coming_steps": 20}, False, "does not repay"),
        ({"hit": 0.0}, False, "does not repay"),  # free cache hits: nothing to save
        ({"miss": 3.0}, False, "does not repay"),  # a dear miss after the rewrite
        ({"summary_tokens": 60_000}, False, "does not repay"),  # a huge summary
        ({"prompt_tokens": 200_000, "coming_steps": 10}, True, "exceeds its cost"),
    ],
)
def test_the_verdict_weighs_saving_against_cost(
    changes: dict[str, float], compact: bool, why: str
) -> None:
    verdict = economic_verdict(inputs(**changes))
    assert verdict.compact is compact
    assert why.split(":")[0] in verdict.reason or compact


def test_the_verdict_has_hysteresis_and_its_figures_add_up() -> None:
    i = inputs(prompt_tokens=20_000, coming_steps=30)
    v = economic_verdict(i)
    removed = i.prompt_tokens - i.after_tokens
    assert v.saving == pytest.approx(FLASH.hit * removed * 29 / 1e6)
    expected_cost = FLASH.output * 800 + FLASH.miss * (i.after_tokens + 80)
    assert v.cost == pytest.approx(expected_cost / 1e6)
    # saving between 1x and 1.5x the cost: not yet (the margin keeps it from flip-flopping)
    steps = next(
        n
        for n in range(2, 500)
        if economic_verdict(inputs(prompt_tokens=20_000, coming_steps=n)).saving > v.cost
    )
    assert not economic_verdict(inputs(prompt_tokens=20_000, coming_steps=steps)).compact
    assert economic_verdict(inputs(prompt_tokens=20_000, coming_steps=steps * 2)).compact


def test_coming_steps_follow_the_session_and_are_capped() -> None:
    assert coming_steps(0) == 0
    assert coming_steps(37) == 37
    assert coming_steps(10_000) == 200


def test_superseded_outputs_are_elided_keeping_the_newest() -> None:
    read = ToolCall("c1", "read_file", '{"path": "a.py"}')
    again = ToolCall("c3", "read_file", '{"path": "a.py"}')
    other = ToolCall("c2", "bash", '{"command": "pytest"}')
    kept = [
        AssistantMessage(content="", tool_calls=(read, other)),
        ToolMessage("c1", "old a.py", name="read_file"),
        ToolMessage("c2", "1 failed", name="bash"),
        AssistantMessage(content="", tool_calls=(again,)),
        ToolMessage("c3", "new a.py", name="read_file"),
    ]
    out = elide_superseded(kept)
    assert [m.content for m in out if isinstance(m, ToolMessage)] == [
        SUPERSEDED_NOTE,
        "1 failed",
        "new a.py",
    ]


# -- the agent applying it ------------------------------------------------------------------


def _workspace(root: Path) -> None:
    for n in range(12):
        body = "".join(f"VALUE_{n}_{i} = {i}  # a line of module {n}\n" for i in range(40))
        (root / f"mod_{n}.py").write_text(body)


def _script(steps: int) -> FunctionProvider:
    count = [0]

    def reply(request: ModelRequest) -> Reply:
        last = request.messages[-1]
        if isinstance(last, UserMessage) and last.content == SUMMARY_INSTRUCTION:
            return Reply.text(SUMMARY)
        done, count[0] = count[0], count[0] + 1
        if done >= steps:
            return Reply.text("All modules read.")
        return Reply.call("read_file", {"path": f"mod_{done % 12}.py"}, reasoning="Next one.")

    info = ModelInfo("deepseek-flash", context_window=1_000_000, prices=FLASH)
    return FunctionProvider(reply, model="deepseek-flash", info=info)


def _agent(
    root: Path, steps: int, policy: Literal["window", "economic"], sink: CollectingSink
) -> Agent:
    agent = Agent(
        _script(steps),
        default_registry(root),
        options=AgentOptions(
            system_prompt=INSTRUCTIONS,
            workspace=root,
            max_steps=steps + 5,
            prices=FLASH,
            compaction_policy=policy,
            repeat_limit=10_000,
        ),
        sink=sink,
    )
    agent.seed_todo_state(
        [TodoItem("Read every module", "in_progress"), TodoItem("Report VALUE names")]
    )
    return agent


@pytest.mark.slow
async def test_economic_compaction_fires_at_the_predicted_step(tmp_path: Path) -> None:
    _workspace(tmp_path)
    # The reference run never compacts; after each step it records what the policy would weigh
    # before the next request. The prediction: the first step whose verdict says compact.
    ref = _agent(tmp_path, 300, "window", CollectingSink())
    verdicts: list[bool] = []

    def weigh(_: object) -> Literal["continue"]:
        i = ref.economic_inputs()
        verdicts.append(i is not None and economic_verdict(i).compact)
        return "continue"

    ref.options = dataclasses.replace(ref.options, compaction_threshold=None)
    await ref.run("Read every module, one by one.", on_step=weigh)
    predicted = verdicts.index(True) + 1  # compaction comes after this many steps
    assert 10 < predicted < 300

    sink = CollectingSink()
    agent = _agent(tmp_path, 300, "economic", sink)
    todo_before = agent.todo_state.render()
    result = await agent.run("Read every module, one by one.")
    assert result.stop_reason == "done", result.text
    events = sink.of_type(CompactionEvent)
    assert events and all(e.accepted for e in events)
    provider = agent.provider
    assert isinstance(provider, FunctionProvider)
    first_summary = next(
        n
        for n, r in enumerate(provider.requests)
        if isinstance(r.messages[-1], UserMessage) and r.messages[-1].content == SUMMARY_INSTRUCTION
    )
    assert first_summary == predicted  # requests 0..predicted-1 were the steps before it
    # a long session compacts more than once, and it paid
    assert len(events) >= 2
    assert agent.compaction_account.compactions == len(events)
    assert agent.compaction_account.saved > 0
    # project instructions and the todo list survive byte for byte
    messages = agent.session.snapshot()
    assert messages[0] == SystemMessage(INSTRUCTIONS)
    assert todo_before in messages[1].content
    assert SUMMARY in messages[1].content


async def test_a_short_session_never_compacts(tmp_path: Path) -> None:
    _workspace(tmp_path)
    sink = CollectingSink()
    agent = _agent(tmp_path, 30, "economic", sink)
    result = await agent.run("Read every module, one by one.")
    assert result.stop_reason == "done"
    assert sink.of_type(CompactionEvent) == []
    assert agent.compaction_account.saved == 0


async def test_the_window_policy_does_not_compact_a_long_session_below_the_window(
    tmp_path: Path,
) -> None:
    _workspace(tmp_path)
    sink = CollectingSink()
    agent = _agent(tmp_path, 120, "window", sink)
    await agent.run("Read every module, one by one.")
    assert sink.of_type(CompactionEvent) == []


async def test_cost_and_the_json_result_show_what_compaction_saved(
    tmp_path: Path, servers: Servers, store: SessionStore
) -> None:
    from reasonix.app.headless import result_object

    ex, _ = servers
    session = await open_session(tmp_path, servers, store)
    try:
        for n in range(6):
            ex.push(Reply.text(f"answer {n}: " + "detail " * 300))
            await session.run_turn(f"question {n}")
        ex.push(Reply.text(SUMMARY))
        assert (await session.compact()).startswith("Compacted")
        ex.push(Reply.text("after"))
        outcome = await session.run_turn("go on")
        saved = session.usage.compaction_savings()
        assert saved["roles"]["executor"]["compactions"] == 1
        account = session.controller.executor.compaction_account
        assert saved["saved_usd"] == round(account.saved, 8) != 0
        assert "Compaction saved $" in session.usage.cost_table()
        assert result_object(session, outcome)["compaction"] == saved
    finally:
        await session.aclose()


async def test_a_conversation_of_short_turns_compacts_keeping_the_last_turn(
    tmp_path: Path,
) -> None:
    def reply(request: ModelRequest) -> Reply:
        last = request.messages[-1]
        if isinstance(last, UserMessage) and last.content == SUMMARY_INSTRUCTION:
            return Reply.text(SUMMARY)
        return Reply.text("An answer in prose. " * 120)

    info = ModelInfo("deepseek-flash", context_window=1_000_000, prices=FLASH)
    sink = CollectingSink()
    agent = Agent(
        FunctionProvider(reply, model="deepseek-flash", info=info),
        ToolRegistry(),
        options=AgentOptions(
            system_prompt=INSTRUCTIONS,
            workspace=tmp_path,
            prices=FLASH,
            compaction_policy="economic",
        ),
        sink=sink,
    )
    for n in range(30):
        await agent.run(f"question {n}")
    events = sink.of_type(CompactionEvent)
    assert events and all(e.accepted for e in events), [e.reason for e in events]
    messages = agent.session.snapshot()
    assert messages[0] == SystemMessage(INSTRUCTIONS)
    assert messages[-2] == UserMessage("question 29")
