"""Defects found reviewing the agent core and the dual-model orchestration, one test each (every
test failed before its fix). In-process scripted providers; real Session/ledger/registry."""

from __future__ import annotations

import hashlib
import itertools
import json
from pathlib import Path
from typing import Any

from reasonix.agent import Agent, AgentOptions, Session, TodoItem
from reasonix.agent.compaction import (
    CONTINUE_NOTE,
    REQUEST_NOTE,
    SUMMARY_HEADER,
    SUMMARY_INSTRUCTION,
)
from reasonix.control import Controller, Options, OrchestratorOptions
from reasonix.control.brief import executor_brief
from reasonix.control.plan import submit_plan_tool
from reasonix.control.todo_tools import STEP_BASELINE, executor_plan_tools
from reasonix.events import CollectingSink, CompactionEvent, StepCompleted
from reasonix.messages import (
    AssistantMessage,
    ModelRequest,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from reasonix.providers.models import ModelInfo
from reasonix.testing import FunctionProvider, Reply, ScriptedProvider
from reasonix.tools.registry import Effect, ToolContext, ToolRegistry, ToolResult, tool


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def fake_tools(*, plan_tools: bool = True) -> ToolRegistry:
    """A writer and a shell whose commands fail when they contain "fail" (plus the executor's
    todo tools, which the Controller adds itself)."""

    @tool
    def write(path: str, text: str) -> ToolResult:
        """Write a file."""
        return ToolResult(f"wrote {path}", effects=(Effect("write", path, _sha(text)),))

    @tool
    def bash(command: str) -> ToolResult:
        """Run a command."""
        ok = "fail" not in command
        out = f"ran {command}: {'ok' if ok else 'FAILED'}"
        return ToolResult(
            out, is_error=not ok, effects=(Effect("command", command, _sha(out), ok=ok),)
        )

    registry = ToolRegistry([write, bash])
    return registry.with_tools(executor_plan_tools()) if plan_tools else registry


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


def session_problems(messages: tuple[Any, ...]) -> list[str]:
    """Two user messages in a row, or an unanswered tool call."""
    problems = []
    for i, (a, b) in enumerate(itertools.pairwise(messages)):
        if isinstance(a, UserMessage) and isinstance(b, UserMessage):
            problems.append(f"two user messages at {i}")
    for i, m in enumerate(messages):
        if isinstance(m, AssistantMessage) and m.tool_calls:
            answered = {t.tool_call_id for t in messages[i + 1 :] if isinstance(t, ToolMessage)}
            problems += [f"unanswered {c.id}" for c in m.tool_calls if c.id not in answered]
    if messages and isinstance(messages[-1], UserMessage):
        problems.append("ends on a user message")
    return problems


# -- complete_step evidence ----------------------------------------------------------------------


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


# -- repeat-call guard ----------------------------------------------------------------------------


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
        return ToolResult(out, effects=(Effect("command", "clock", _sha(out)),))

    # a writer whose output is new each time (so each run is "progress") does not reset its
    # own repeat count
    agent = Agent(
        ScriptedProvider([Reply.call("clock") for _ in range(3)] + [Reply.text("ok")]),
        ToolRegistry([clock]),
    )
    await agent.run("what time is it")
    assert tool_outputs(agent)[2].startswith("Not run:")


# -- tool arguments -------------------------------------------------------------------------------


async def test_null_for_an_optional_argument_means_left_out() -> None:
    # Before: ``"risks": null`` or a step's ``"verify": null`` failed validation ("expected
    # array, got null"), and two such submit_plan errors fail the whole planning round.
    reg = ToolRegistry([submit_plan_tool()])
    ctx = ToolContext(Path.cwd())
    args = {
        "objective": "o",
        "steps": [{"title": "t", "verify": None, "files": None}],
        "risks": None,
        "assumptions": None,
    }
    result = await reg.execute("submit_plan", json.dumps(args), ctx)
    assert not result.is_error, result.content
    plan = ctx.state["submitted_plan"]
    assert plan.risks == ()
    assert plan.steps[0].files == []
    assert plan.steps[0].verify == ""

    @tool
    def f(a: int, b: list[str] | None = None, c: int = 5, d: dict[str, Any] | None = None) -> str:
        """F."""
        return f"{a} {b} {c} {d}"

    reg2 = ToolRegistry([f])
    out = await reg2.execute("f", '{"a": 1, "b": null, "c": null, "d": {"k": null}}', ctx)
    assert out.content == "1 None 5 {'k': None}"  # a free-form object keeps its nulls
    missing = await reg2.execute("f", '{"a": null}', ctx)  # a required one is still required
    assert missing.is_error
    assert "expected integer, got null" in missing.content


# -- agent loop -----------------------------------------------------------------------------------


async def test_an_unexpected_exception_leaves_no_dangling_user_message() -> None:
    class Broken:
        model = "m"
        info = ModelInfo("m")

        async def stream(self, request: ModelRequest) -> Any:
            raise RuntimeError("provider bug")
            yield  # pragma: no cover

    agent = Agent(Broken())  # type: ignore[arg-type]
    try:
        await agent.run("hello")
    except RuntimeError:
        pass
    else:  # pragma: no cover
        raise AssertionError("the exception must propagate")
    assert session_problems(agent.session.snapshot()) == []
    assert [m.role for m in agent.session.snapshot()] == ["system", "user", "assistant"]


# -- compaction -----------------------------------------------------------------------------------


def _long_turn_handler(summaries: list[str]) -> Any:
    def handler(request: ModelRequest) -> Reply:
        last = request.messages[-1]
        if isinstance(last, UserMessage) and last.content == SUMMARY_INSTRUCTION:
            return Reply.text(summaries.pop(0) if summaries else "short summary")
        return Reply.call("bash", {"command": f"echo {len(request.messages)} " + "x" * 300})

    return handler


async def test_compacting_inside_one_long_turn_keeps_its_request_verbatim() -> None:
    # Before: a cut inside the current turn replaced the user's request with the model's
    # paraphrase; the exact request (constraints, names, wording) was gone from the session.
    request = "Rename Foo to Bar in src/, but NEVER touch src/legacy/ or the public API."
    agent = Agent(
        FunctionProvider(_long_turn_handler([])),
        fake_tools(),
        options=AgentOptions(max_steps=12, compaction_threshold=None),
    )
    await agent.run(request)
    first = await agent.compact()
    assert first.accepted
    msgs = agent.session.snapshot()
    assert isinstance(msgs[1], UserMessage)
    assert msgs[1].content.startswith(SUMMARY_HEADER)
    assert f"{REQUEST_NOTE}\n{request}\n\n{CONTINUE_NOTE}" in msgs[1].content
    assert session_problems(msgs) == []
    # compacting again carries the same request, once, not the previous summary
    agent.options.max_steps = 12
    agent.provider = FunctionProvider(_long_turn_handler(["second summary"]))
    await agent.run(None)
    await agent.compact()
    content = agent.session.snapshot()[1].content
    assert "second summary" in content
    assert content.count(request) == 1
    assert content.count(SUMMARY_HEADER) == 1


async def test_a_refused_auto_compaction_is_not_retried_on_every_step() -> None:
    # Before: after a refusal the next step measured the prompt again and asked for another
    # summary, so every step past the threshold paid for a summary request it then refused.
    summaries = ["y" * 50_000] * 40  # always too large: always refused
    provider = FunctionProvider(_long_turn_handler(summaries))
    sink = CollectingSink()
    agent = Agent(
        provider,
        fake_tools(),
        options=AgentOptions(
            max_steps=16, context_window=20_000, compaction_threshold=0.1, compaction_keep_turns=1
        ),
        sink=sink,
    )
    await agent.run("echo many things")
    attempts = sink.of_type(CompactionEvent)
    assert attempts
    assert not any(e.accepted for e in attempts)
    assert len(attempts) <= 4, len(attempts)
    summary_requests = [
        r for r in provider.requests if r.messages[-1] == UserMessage(SUMMARY_INSTRUCTION)
    ]
    assert len(summary_requests) == len([e for e in attempts if "too large" in e.reason])


# -- orchestration --------------------------------------------------------------------------------


def _bash_round(call_id: str, command: str) -> list[Any]:
    return [
        AssistantMessage(tool_calls=(ToolCall(call_id, "bash", json.dumps({"command": command})),)),
        ToolMessage(call_id, f"ran {command}", name="bash"),
    ]


def test_the_replan_brief_still_sees_new_work_after_compaction() -> None:
    # Before: the brief started at a stored index into the executor session; compaction made
    # the session shorter, so after it the planner was told nothing of what the executor did.
    ctrl = Controller(
        Options(executor_provider=ScriptedProvider([]), planner_provider=ScriptedProvider([]))
    )
    session: Session = ctrl.executor.session
    session.add(SystemMessage("s"))
    session.add(UserMessage("task"))
    for i in range(10):
        for m in _bash_round(f"c{i}", f"old-command-{i}"):
            session.add(m)
    assert "old-command-9" in ctrl.orchestrator._brief()
    kept = session.snapshot()[-2:]
    summary = [SystemMessage("s"), UserMessage(f"{SUMMARY_HEADER}\n..."), AssistantMessage("ok")]
    session.rewrite([*summary, *kept], reason="compaction")
    for m in _bash_round("n1", "new-command"):
        session.add(m)
    brief = ctrl.orchestrator._brief()
    assert "new-command" in brief
    assert "old-command" not in brief  # already briefed, kept verbatim: not repeated
    assert ctrl.orchestrator._brief() == ""  # nothing new since


def test_the_brief_stays_within_its_budget_with_the_dropped_note() -> None:
    msgs = [AssistantMessage(content=f"note {i} " + "z" * (37 + i % 13)) for i in range(30)]
    for budget in range(60, 1500, 7):
        brief = executor_brief(msgs, budget=budget)
        assert len(brief) <= budget, budget
        assert "earlier entries dropped" in brief.splitlines()[0]


def _plan(title: str, verify: str) -> Reply:
    return Reply.call(
        "submit_plan", {"objective": title, "steps": [{"title": title, "verify": verify}]}
    )


async def test_an_approved_pending_plan_carries_its_task_to_executor_and_replans() -> None:
    # Before: execute_pending_plan used the approval text as the task: the executor never saw
    # the request the plan was made for, and a re-plan asked the planner to plan for "The plan
    # is approved: carry it out."
    task = "Make the frobnicator build on ARM without touching x86 paths"
    planner = ScriptedProvider([_plan("Build", "make arm"), _plan("Script it", "sh arm.sh")])
    executor = ScriptedProvider(
        [Reply.call("bash", {"command": "make arm fail"}) for _ in range(3)]
        + [Reply.text("gave up")]
    )
    ctrl = Controller(
        Options(
            executor_provider=executor,
            planner_provider=planner,
            tool_registry=fake_tools(plan_tools=False),
            orchestration=OrchestratorOptions(max_replans=1),
        )
    )
    only = await ctrl.run_turn(task, plan_only=True)
    assert only.stop_reason == "plan_only"
    result = await ctrl.execute_pending_plan()
    assert result.replans == 1
    first_exec = executor.requests[0].messages
    assert isinstance(first_exec[-1], UserMessage)
    assert task in first_exec[-1].content
    replan_request = planner.requests[-1].messages[-1]
    assert isinstance(replan_request, UserMessage)
    assert replan_request.content.startswith(f"Task:\n{task}")
    assert ctrl.planner is not None
    assert session_problems(ctrl.executor.session.snapshot()) == []
    assert session_problems(ctrl.planner.session.snapshot()) == []


async def test_a_verify_run_from_an_earlier_turn_does_not_sign_a_new_plan_step() -> None:
    planner = ScriptedProvider([_plan("Do it", "true")])
    executor = ScriptedProvider(
        [
            Reply.call("bash", {"command": "true"}),  # turn 1, before any plan
            Reply.text("ran it"),
            Reply.call("complete_step", {"step": "1", "evidence": "true exit 0"}),
            Reply.call("bash", {"command": "true"}),
            Reply.call("complete_step", {"step": "1", "evidence": "true exit 0"}),
            Reply.text("done"),
        ]
    )
    sink = CollectingSink()
    ctrl = Controller(
        Options(
            executor_provider=executor,
            planner_provider=planner,
            tool_registry=fake_tools(plan_tools=False),
            sink=sink,
        )
    )
    await ctrl.run_turn("run true", plan=False)
    result = await ctrl.run_turn("plan first: do it")
    assert result.text == "done"
    assert [(e.step, e.accepted) for e in sink.of_type(StepCompleted)] == [
        ("1", False),
        ("1", True),
    ]
