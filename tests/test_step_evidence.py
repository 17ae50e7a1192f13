"""complete_step evidence and the repeated-call guard: the host signs a step off only with
evidence it observed during that step, and a loop of the same call is caught even when its
output changes."""

from __future__ import annotations

from pathlib import Path

from reasonix.agent import Agent, AgentOptions, TodoItem
from reasonix.control.todo_tools import STEP_BASELINE
from reasonix.events import CollectingSink
from reasonix.messages import (
    ToolMessage,
)
from reasonix.store import SessionStore
from reasonix.testing import Reply, ScriptedProvider
from reasonix.tools.registry import Effect, ToolRegistry, ToolResult, tool
from tests.support.agents import digest, fake_tools
from tests.support.sessions import Servers, open_session


def planned_agent(replies: list[Reply], items: list[TodoItem]) -> tuple[Agent, CollectingSink]:
    sink = CollectingSink()
    agent = Agent(ScriptedProvider(replies), fake_tools(), options=AgentOptions(), sink=sink)
    verdicts: list[tuple[str, bool, str]] = []
    agent.tool_state["step_callback"] = lambda s, ok, why: verdicts.append((s, ok, why))
    agent.seed_todo_state(items)
    STEP_BASELINE.set(agent.tool_state, agent.ledger.mark())
    return agent, sink


def tool_outputs(agent: Agent) -> list[str]:
    return [m.content for m in agent.session.snapshot() if isinstance(m, ToolMessage)]


async def test_todo_bookkeeping_is_not_evidence_for_the_next_step() -> None:
    # Before: a successful complete_step (its generic "call" effect) and a todo_write each
    # counted as "progress since the step started", so after one real edit every following
    # step without a verify command could be signed off with no work at all.
    agent, _ = planned_agent(
        [
            Reply.call("write", {"path": "a.py", "text": "x"}),
            Reply.call("complete_step", {"step": "1", "evidence": "wrote a.py"}),
            Reply.call("complete_step", {"step": "2", "evidence": "trust me"}),
            Reply.call(
                "todo_write",
                {"items": [{"content": "s2", "status": "in_progress"}, {"content": "s3"}]},
            ),
            Reply.call("complete_step", {"step": "1", "evidence": "trust me"}),
            Reply.call("write", {"path": "b.py", "text": "y"}),
            Reply.call("complete_step", {"step": "1", "evidence": "wrote b.py"}),
            Reply.text("done"),
        ],
        [
            TodoItem("s1", "in_progress", origin="planner", id="1"),
            TodoItem("s2", origin="planner", id="2"),
            TodoItem("s3", origin="planner", id="3"),
        ],
    )
    await agent.run("go")
    outs = tool_outputs(agent)
    assert outs[1].startswith("Step 1 completed")
    assert outs[2].startswith("complete_step refused: the host observed no progress")
    assert outs[4].startswith("complete_step refused: the host observed no progress")
    assert outs[6].startswith("Step 1 completed")  # s2, renumbered by todo_write, after work
    assert [(i.content, i.status) for i in agent.todo_state.items] == [
        ("s2", "completed"),
        ("s3", "in_progress"),
    ]


async def test_verification_must_run_in_the_step_and_after_its_last_edit() -> None:
    # Before: any successful run of the verify command, ever, was accepted: one made before the
    # change, or one from an earlier step with the same command.
    agent, _ = planned_agent(
        [
            Reply.call("bash", {"command": "pytest -q"}),
            Reply.call("write", {"path": "a.py", "text": "x"}),
            Reply.call("complete_step", {"step": "1", "evidence": "pytest -q passed"}),
            Reply.call("bash", {"command": "pytest  -q"}),  # whitespace is not significant
            Reply.call("complete_step", {"step": "1", "evidence": "pytest -q passed"}),
            Reply.call("complete_step", {"step": "2", "evidence": "pytest -q passed"}),
            Reply.call("bash", {"command": "pytest -q"}),
            Reply.call("complete_step", {"step": "2", "evidence": "pytest -q passed"}),
            Reply.text("done"),
        ],
        [
            TodoItem("change a", "in_progress", origin="planner", id="1", verify="pytest -q"),
            TodoItem("check all", origin="planner", id="2", verify="pytest -q"),
        ],
    )
    await agent.run("go")
    outs = tool_outputs(agent)
    assert outs[2].startswith("complete_step refused")  # ran before the edit
    assert "after its last edit" in outs[2]
    assert outs[4].startswith("Step 1 completed")
    assert outs[5].startswith("complete_step refused")  # step 1's run does not sign step 2
    assert outs[7].startswith("Step 2 completed")
    assert [i.status for i in agent.todo_state.items] == ["completed", "completed"]


async def test_rerunning_the_tests_after_each_fix_is_not_refused_as_a_loop() -> None:
    # Before: test, fix, test, fix, test refused the third run ("The result will not change")
    # although the workspace had changed in between: the ordinary edit-test cycle was blocked.
    agent, _ = planned_agent(
        [
            Reply.call("bash", {"command": "pytest fail"}),
            Reply.call("write", {"path": "a.py", "text": "1"}),
            Reply.call("bash", {"command": "pytest fail"}),
            Reply.call("write", {"path": "a.py", "text": "2"}),
            Reply.call("bash", {"command": "pytest fail"}),
            # a true loop (nothing changes in between) is still refused
            Reply.call("bash", {"command": "pytest fail"}),
            Reply.call("bash", {"command": "pytest fail"}),
            Reply.text("stuck"),
        ],
        [],
    )
    await agent.run("make the tests pass")
    outs = tool_outputs(agent)
    assert [o.startswith("Not run:") for o in outs] == [False] * 6 + [True]


async def test_a_command_repeating_with_new_output_is_still_a_loop() -> None:
    counter = iter(range(100))

    @tool
    def clock() -> ToolResult:
        """Tell the time."""
        out = f"tick {next(counter)}"
        return ToolResult(out, effects=(Effect("command", "clock", digest(out)),))

    # a writer whose output is new each time (so each run is "progress") does not reset its
    # own repeat count
    agent = Agent(
        ScriptedProvider([Reply.call("clock") for _ in range(3)] + [Reply.text("ok")]),
        ToolRegistry([clock]),
    )
    await agent.run("what time is it")
    assert tool_outputs(agent)[2].startswith("Not run:")


async def test_a_verification_only_started_in_the_background_is_not_a_pass(
    tmp_path: Path, servers: Servers, store: SessionStore
) -> None:
    """Starting the verification command as a background job says nothing of its exit code:
    the step is signed off only after the command ran (in front) and passed."""
    ex, pl = servers
    check = "test -f done.txt"
    pl.push(
        Reply.call(
            "submit_plan",
            {"objective": "Make done.txt", "steps": [{"title": "Write it", "verify": check}]},
        )
    )
    ex.push(
        Reply.call("write_file", {"path": "done.txt", "content": "x\n"}),
        Reply.call("bash", {"command": check, "run_in_background": True}),
        Reply.call("complete_step", {"step": "1", "evidence": f"{check} started"}),
        Reply.call("bash", {"command": check}),
        Reply.call("complete_step", {"step": "1", "evidence": f"{check} passed"}),
        Reply.text("done"),
    )
    session = await open_session(tmp_path, servers, store, {"permissions.mode": "yolo"})
    try:
        await session.run_turn("make done.txt", plan=True)
        outs = tool_outputs(session.controller.executor)
    finally:
        await session.aclose()
    assert outs[1].startswith("Started background job")
    assert outs[2].startswith("complete_step refused: step 1 names the verification command")
    assert outs[4].startswith("Step 1 completed")
