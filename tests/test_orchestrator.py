"""Dual-model orchestration end to end: executor and planner each talk to their own
FakeDeepSeekServer over loopback HTTP; tools run against a real temp directory and shell."""

from __future__ import annotations

import hashlib
import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from reasonix.agent import AgentOptions, Session
from reasonix.agent.compaction import (
    SUMMARY_HEADER,
)
from reasonix.control import Controller, Options, OrchestratorOptions, Route
from reasonix.control.brief import executor_brief
from reasonix.control.gate import GateOptions, decide
from reasonix.events import (
    CollectingSink,
    GateDecided,
    PlanFailed,
    PlanProduced,
    ReplanTriggered,
    StepCompleted,
    UsageEvent,
)
from reasonix.messages import (
    AssistantMessage,
    SystemMessage,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
)
from reasonix.providers.models import ModelInfo, Prices, price_usage
from reasonix.testing import FakeDeepSeekServer, Reply, ScriptedProvider
from reasonix.tools.registry import Effect, ToolContext, ToolRegistry, ToolResult, tool
from tests.support.agents import fake_tools, session_problems
from tests.support.wire import wire_prefix_violations

ProviderFactory = Callable[..., Any]


def workspace_tools() -> ToolRegistry:
    """Small real tools over ctx.workspace: a reader, a writer and a shell."""

    @tool(read_only=True)
    def read(path: str, ctx: ToolContext) -> ToolResult:
        """Read a file."""
        text = (ctx.workspace / path).read_text()
        return ToolResult(text, effects=(Effect("read", path, _sha(text)),))

    @tool
    def write(path: str, text: str, ctx: ToolContext) -> ToolResult:
        """Write a file."""
        (ctx.workspace / path).write_text(text)
        return ToolResult(f"wrote {path}", effects=(Effect("write", path, _sha(text)),))

    @tool
    def bash(command: str, ctx: ToolContext) -> ToolResult:
        """Run a shell command."""
        proc = subprocess.run(
            command, shell=True, cwd=ctx.workspace, capture_output=True, text=True, check=False
        )
        out = f"exit {proc.returncode}\n{proc.stdout}{proc.stderr}"
        ok = proc.returncode == 0
        return ToolResult(
            out, is_error=not ok, effects=(Effect("command", command, _sha(out), ok=ok),)
        )

    return ToolRegistry([read, write, bash])


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def plan_reply(
    *steps: tuple[str, str], requires_approval: bool = False, objective: str = "Do it"
) -> Reply:
    return Reply.call(
        "submit_plan",
        {
            "objective": objective,
            "steps": [{"title": t, "verify": v, "files": [], "acceptance": ""} for t, v in steps],
            "risks": ["none"],
            "requires_approval": requires_approval,
        },
    )


def make_controller(
    servers: tuple[FakeDeepSeekServer, FakeDeepSeekServer],
    make_provider: ProviderFactory,
    tmp_path: Path,
    sink: CollectingSink,
    **orch: Any,
) -> Controller:
    ex, pl = servers
    return Controller(
        Options(
            executor_provider=make_provider(ex, "deepseek-v4-flash"),
            planner_provider=make_provider(pl, "deepseek-v4-pro"),
            tool_registry=workspace_tools(),
            executor_options=AgentOptions(workspace=tmp_path, max_steps=30),
            sink=sink,
            orchestration=OrchestratorOptions(**orch),
        )
    )


MULTI_STEP = (
    "Refactor the parser: 1. add a tokenizer in tok.py 2. use it from parse.py "
    "3. update tests in test_parse.py"
)


async def test_simple_question_runs_executor_only(
    servers: tuple[FakeDeepSeekServer, FakeDeepSeekServer],
    make_provider: ProviderFactory,
    tmp_path: Path,
) -> None:
    ex, pl = servers
    ex.push(Reply.text("A list comprehension builds a list in one expression."))
    sink = CollectingSink()
    ctrl = make_controller(servers, make_provider, tmp_path, sink)
    result = await ctrl.run_turn("what is a list comprehension?")
    assert result.route is Route.EXECUTOR_ONLY
    assert result.text.startswith("A list comprehension")
    assert result.ok
    assert ctrl.planner is not None
    assert len(ctrl.planner.session) == 0
    assert pl.requests == []
    assert "planner" not in ctrl.cost_summary()
    (gate,) = sink.of_type(GateDecided)
    assert gate.route == "executor_only"
    assert gate.reason == "score_below_threshold"


async def test_multi_step_request_plans_then_executes_with_evidence(
    servers: tuple[FakeDeepSeekServer, FakeDeepSeekServer],
    make_provider: ProviderFactory,
    tmp_path: Path,
) -> None:
    ex, pl = servers
    (tmp_path / "notes.txt").write_text("parser notes\n")
    pl.push(
        Reply.call("read", {"path": "notes.txt"}),
        plan_reply(
            ("Create tok.py", "test -f tok.py"),
            ("Create parse.py", "grep -q tok parse.py"),
        ),
    )
    ex.push(
        Reply.call("write", {"path": "tok.py", "text": "def tok(): ...\n"}),
        # claims step 1 before running its verification command: refused
        Reply.call("complete_step", {"step": "1", "evidence": "I wrote it"}),
        Reply.call("bash", {"command": "test -f tok.py"}),
        Reply.call("complete_step", {"step": "1", "evidence": "test -f tok.py exit 0"}),
        Reply.call("write", {"path": "parse.py", "text": "import tok\n"}),
        Reply.call("bash", {"command": "grep -q tok parse.py"}),
        Reply.call("complete_step", {"step": "2", "evidence": "grep found tok"}),
        Reply.text("Both steps done."),
    )
    sink = CollectingSink()
    ctrl = make_controller(servers, make_provider, tmp_path, sink)
    result = await ctrl.run_turn(MULTI_STEP)
    ex.assert_exhausted()
    pl.assert_exhausted()
    assert result.route is Route.PLAN_AND_EXECUTE
    assert result.text == "Both steps done."
    assert result.plan is not None
    assert [s.title for s in result.plan.steps] == ["Create tok.py", "Create parse.py"]
    # the plan became the executor's todo list (origin planner), now all completed
    items = ctrl.executor.todo_state.items
    assert [i.origin for i in items] == ["planner", "planner"]
    assert [i.status for i in items] == ["completed", "completed"]
    verdicts = [(e.step, e.accepted) for e in sink.of_type(StepCompleted)]
    assert verdicts == [("1", False), ("1", True), ("2", True)]
    refused = sink.of_type(StepCompleted)[0]
    assert "test -f tok.py" in refused.reason
    # the handoff rides in the turn's single user message, after the task
    ex_first = ex.requests[0].messages
    assert [m["role"] for m in ex_first] == ["system", "user"]
    assert ex_first[1]["content"].startswith(MULTI_STEP)
    assert "Create tok.py" in ex_first[1]["content"]
    # the executor's system prompt is not touched by the plan
    assert "Create tok.py" not in ex_first[0]["content"]
    # the planner saw read-only tools and submit_plan only
    planner_tools = sorted(t["function"]["name"] for t in pl.requests[0].body["tools"])
    assert planner_tools == ["read", "submit_plan"]
    assert (tmp_path / "parse.py").read_text() == "import tok\n"
    assert sink.of_type(PlanProduced)[0].round == 1


async def test_stall_triggers_replan_with_failure_brief_then_recovers(
    servers: tuple[FakeDeepSeekServer, FakeDeepSeekServer],
    make_provider: ProviderFactory,
    tmp_path: Path,
) -> None:
    ex, pl = servers
    pl.push(
        plan_reply(("Run the build", "make build"), objective="Build it"),
        plan_reply(("Create the build script", "sh build.sh"), objective="Script instead"),
    )
    failing = Reply.call("bash", {"command": "make build"})
    ex.push(
        failing,
        Reply.call("bash", {"command": "make build"}),
        Reply.call("bash", {"command": "make build"}),  # refused as a repeat: the stall
        Reply.call("write", {"path": "build.sh", "text": "echo built\n"}),
        Reply.call("bash", {"command": "sh build.sh"}),
        Reply.call("complete_step", {"step": "1", "evidence": "sh build.sh printed built"}),
        Reply.text("Built with the script."),
    )
    sink = CollectingSink()
    ctrl = make_controller(servers, make_provider, tmp_path, sink)
    result = await ctrl.run_turn("plan first: build the project")
    ex.assert_exhausted()
    pl.assert_exhausted()
    assert result.text == "Built with the script."
    assert result.replans == 1
    (replan,) = sink.of_type(ReplanTriggered)
    assert "same failing call" in replan.reason
    # the planner got the failure brief: the failing command and its error, not the transcript
    replan_request = pl.requests[1].messages[-1]["content"]
    assert "make build" in replan_request
    assert "FAILED" in replan_request
    assert "No rule to make target" in replan_request or "exit 2" in replan_request
    assert [i.content for i in ctrl.executor.todo_state.items] == ["Create the build script"]
    # the re-plan handoff arrives after tool results, as a user message
    resumed = ex.requests[3].messages
    assert resumed[-1]["role"] == "user"
    assert resumed[-2]["role"] == "tool"
    assert "stalled" in resumed[-1]["content"]


async def test_replan_bound_is_respected_and_turn_ends_clearly(
    servers: tuple[FakeDeepSeekServer, FakeDeepSeekServer],
    make_provider: ProviderFactory,
    tmp_path: Path,
) -> None:
    ex, pl = servers
    pl.push(
        plan_reply(("Run it", "false"), objective="First try"),
        plan_reply(("Run it again", "false"), objective="Second try"),
    )
    for _ in range(2):
        ex.push(*[Reply.call("bash", {"command": "false"}) for _ in range(3)])
    sink = CollectingSink()
    ctrl = make_controller(servers, make_provider, tmp_path, sink, max_replans=1)
    result = await ctrl.run_turn("plan first: make false succeed")
    ex.assert_exhausted()
    pl.assert_exhausted()
    assert result.stop_reason == "stalled"
    assert result.replans == 1
    assert "limit 1" in result.text
    assert "First try" in result.text
    assert "Second try" in result.text
    # the executor session is still valid: ends with tool results, next turn works
    ex.push(Reply.text("ok"))
    again = await ctrl.run_turn("ok")
    assert again.text == "ok"


async def test_plan_only_and_approval_routes(
    servers: tuple[FakeDeepSeekServer, FakeDeepSeekServer],
    make_provider: ProviderFactory,
    tmp_path: Path,
) -> None:
    ex, pl = servers
    sink = CollectingSink()
    # plan_only: plan, store, stop; the executor never runs
    pl.push(plan_reply(("Step A", "true")))
    ctrl = make_controller(servers, make_provider, tmp_path, sink)
    only = await ctrl.run_turn("design the cache", plan_only=True)
    assert only.route is Route.PLAN_ONLY
    assert only.stop_reason == "plan_only"
    assert "Step A" in only.text
    assert ctrl.pending_plan is not None
    assert ex.requests == []
    # the stored plan can be executed later
    ex.push(Reply.call("bash", {"command": "true"}))
    ex.push(Reply.call("complete_step", {"step": "1", "evidence": "true exit 0"}))
    ex.push(Reply.text("executed the stored plan"))
    later = await ctrl.execute_pending_plan()
    assert later.text == "executed the stored plan"
    assert ctrl.pending_plan is None

    # plan_for_approval, declined by the approver
    asked: list[str] = []

    def decline(plan: Any) -> bool:
        asked.append(plan.objective)
        return False

    pl.push(plan_reply(("Drop the table", "true"), objective="Destroy"))
    ctrl2 = make_controller(
        servers,
        make_provider,
        tmp_path,
        sink,
        gate=GateOptions(approve_plans=True),
        approver=decline,
    )
    before = len(ex.requests)
    declined = await ctrl2.run_turn("plan first: drop the table")
    assert declined.route is Route.PLAN_FOR_APPROVAL
    assert declined.stop_reason == "plan_declined"
    assert asked == ["Destroy"]
    assert len(ex.requests) == before

    # plan_for_approval, approved
    pl.push(plan_reply(("Say hi", "true"), objective="Greet"))
    ex.push(Reply.call("bash", {"command": "true"}))
    ex.push(Reply.call("complete_step", {"step": "1", "evidence": "true exit 0"}))
    ex.push(Reply.text("hi"))
    ctrl3 = make_controller(
        servers,
        make_provider,
        tmp_path,
        sink,
        gate=GateOptions(approve_plans=True),
        approver=lambda p: True,
    )
    approved = await ctrl3.run_turn("plan first: greet")
    assert approved.stop_reason == "done"
    assert approved.text == "hi"

    # headless default: no approver, a plan that requires approval stops and reports
    pl.push(plan_reply(("Risky", "true"), requires_approval=True))
    ctrl4 = make_controller(servers, make_provider, tmp_path, sink)
    headless = await ctrl4.run_turn("plan first: risky thing")
    assert headless.stop_reason == "plan_declined"
    assert "no approver" in headless.text
    ex.assert_exhausted()
    pl.assert_exhausted()


async def test_planner_text_answer_gets_one_corrective_retry_then_fails_cleanly(
    servers: tuple[FakeDeepSeekServer, FakeDeepSeekServer],
    make_provider: ProviderFactory,
    tmp_path: Path,
) -> None:
    ex, pl = servers
    # first round: text, then a plan after the corrective message
    pl.push(Reply.text("Here is my plan in prose."), plan_reply(("Do", "true")))
    # The executor stops with the step open, and again after being told it is open.
    ex.push(Reply.text("done"), Reply.text("done, really"))
    sink = CollectingSink()
    ctrl = make_controller(servers, make_provider, tmp_path, sink)
    result = await ctrl.run_turn("plan first: something")
    assert result.plan is not None
    assert result.stop_reason == "plan_incomplete"
    assert "submit_plan" in pl.requests[1].messages[-1]["content"]
    # second round: text twice -> failure event, executor proceeds alone, planner rolled back
    assert ctrl.planner is not None
    planner_len = len(ctrl.planner.session)
    pl.push(Reply.text("prose again"), Reply.text("still prose"))
    ex.push(Reply.text("did it alone"))
    failed = await ctrl.run_turn("plan first: another thing")
    assert failed.text == "did it alone"
    assert failed.plan is None
    (event,) = sink.of_type(PlanFailed)
    assert "did not call submit_plan" in event.reason
    assert len(ctrl.planner.session) == planner_len
    ex.assert_exhausted()
    pl.assert_exhausted()


async def test_sessions_are_isolated_and_each_is_a_pure_prefix_extension(
    servers: tuple[FakeDeepSeekServer, FakeDeepSeekServer],
    make_provider: ProviderFactory,
    tmp_path: Path,
) -> None:
    ex, pl = servers
    (tmp_path / "a.txt").write_text("alpha\n")
    pl.push(
        Reply.call("read", {"path": "a.txt"}),
        plan_reply(("Make b", "test -f b.txt")),
        plan_reply(("Check nope", "test -f nope")),  # turn 3
        plan_reply(("Make c", "test -f c.txt")),  # turn 3 re-plan
        plan_reply(("Make d", "test -f d.txt")),  # third turn
    )
    ex.push(
        # turn 1
        Reply.call("write", {"path": "b.txt", "text": "b"}),
        Reply.call("bash", {"command": "test -f b.txt"}),
        Reply.call("complete_step", {"step": "1", "evidence": "ok"}),
        Reply.text("made b"),
        # turn 2: a simple follow-up
        Reply.text("yes, b exists"),
        # turn 3: stall then re-plan
        Reply.call("bash", {"command": "test -f nope"}),
        Reply.call("bash", {"command": "test -f nope"}),
        Reply.call("bash", {"command": "test -f nope"}),
        Reply.call("write", {"path": "c.txt", "text": "c"}),
        Reply.call("bash", {"command": "test -f c.txt"}),
        Reply.call("complete_step", {"step": "1", "evidence": "ok"}),
        Reply.text("made c"),
        # turn 4: planned again
        Reply.call("write", {"path": "d.txt", "text": "d"}),
        Reply.call("bash", {"command": "test -f d.txt"}),
        Reply.call("complete_step", {"step": "1", "evidence": "ok"}),
        Reply.text("made d"),
    )
    sink = CollectingSink()
    ctrl = make_controller(servers, make_provider, tmp_path, sink)
    await ctrl.run_turn("plan first: make b")
    await ctrl.run_turn("is b there?")
    await ctrl.run_turn("plan first: make c")
    await ctrl.run_turn("plan first: make d")
    ex.assert_exhausted()
    pl.assert_exhausted()
    assert wire_prefix_violations(ex.requests) == []
    assert wire_prefix_violations(pl.requests) == []
    assert ctrl.planner is not None
    planner_roles = {m.role for m in ctrl.planner.session.snapshot()}
    planner_tool_names = {
        c.name
        for m in ctrl.planner.session.snapshot()
        if m.role == "assistant"
        for c in m.tool_calls  # type: ignore[union-attr]
    }
    assert planner_tool_names <= {"read", "submit_plan"}  # no executor tool traffic
    assert "tool" in planner_roles
    exec_tools = {t["function"]["name"] for t in ex.requests[0].body["tools"]}
    assert {"todo_write", "complete_step", "write", "bash"} <= exec_tools
    assert "submit_plan" not in exec_tools
    # every request after the first in each session hit the cache for the whole previous prompt
    for srv in (ex, pl):
        for prev, cur in zip(srv.requests, srv.requests[1:], strict=False):
            assert cur.usage is not None
            assert prev.prompt_tokens is not None
            unit = srv.unit_tokens
            assert cur.usage.cache_hit_tokens >= (prev.prompt_tokens // unit) * unit


async def test_per_role_cost_equals_server_usage_times_each_models_prices(
    make_provider: ProviderFactory, tmp_path: Path
) -> None:
    flash_prices = Prices(hit=0.01, miss=0.5, output=1.0)
    pro_prices = Prices(hit=0.05, miss=2.0, output=4.0)
    async with (
        FakeDeepSeekServer(models=["fast-model"]) as ex,
        FakeDeepSeekServer(models=["smart-model"]) as pl,
    ):
        pl.push(Reply.call("read", {"path": "x.txt"}), plan_reply(("Write y", "test -f y.txt")))
        ex.push(
            Reply.call("write", {"path": "y.txt", "text": "y"}),
            Reply.call("bash", {"command": "test -f y.txt"}),
            Reply.call("complete_step", {"step": "1", "evidence": "exit 0"}),
            Reply.text("done"),
        )
        (tmp_path / "x.txt").write_text("x" * 500)
        sink = CollectingSink()
        ctrl = Controller(
            Options(
                executor_provider=make_provider(ex, "fast-model", flash_prices),
                planner_provider=make_provider(pl, "smart-model", pro_prices),
                tool_registry=workspace_tools(),
                executor_options=AgentOptions(workspace=tmp_path),
                sink=sink,
            )
        )
        result = await ctrl.run_turn("plan first: write y")
    summary = ctrl.cost_summary()

    def server_total(srv: FakeDeepSeekServer) -> Usage:
        total = Usage()
        for r in srv.requests:
            assert r.usage is not None
            total = total + r.usage
        return total

    ex_usage, pl_usage = server_total(ex), server_total(pl)
    assert summary["executor"].usage == ex_usage
    assert summary["planner"].usage == pl_usage
    assert summary["executor"].requests == len(ex.requests) == 4
    assert summary["planner"].requests == len(pl.requests) == 2
    assert summary["executor"].cost == pytest.approx(price_usage(ex_usage, flash_prices))
    assert summary["planner"].cost == pytest.approx(price_usage(pl_usage, pro_prices))
    assert pl_usage.cache_hit_tokens > 0
    assert result.cost_by_role["planner"].cost == pytest.approx(summary["planner"].cost)
    models = {e.source.value: e.model for e in sink.of_type(UsageEvent)}
    assert models == {"executor": "fast-model", "planner": "smart-model"}
    table = ctrl.cost_table()
    assert "executor" in table
    assert "planner" in table
    assert json.dumps(result.to_dict())  # serialisable for the JSON output


@pytest.mark.parametrize(
    ("text", "route", "reason"),
    [
        ("ok", Route.EXECUTOR_ONLY, "short_followup"),
        ("continue", Route.EXECUTOR_ONLY, "short_followup"),
        ("yes!", Route.EXECUTOR_ONLY, "short_followup"),
        ("Please plan first, then fix the login bug", Route.PLAN_AND_EXECUTE, "explicit_wording"),
        (
            "why does test_login fail with a KeyError on the session object?",
            Route.EXECUTOR_ONLY,
            "score_below_threshold",
        ),
        (MULTI_STEP, Route.PLAN_AND_EXECUTE, "score_above_threshold"),
        (
            "Analyze this dataset, generate visualizations, and write the report.",
            Route.PLAN_AND_EXECUTE,
            "score_above_threshold",
        ),
        (
            "Migrate every module from requests to httpx across the codebase and update tests",
            Route.PLAN_AND_EXECUTE,
            "score_above_threshold",
        ),
    ],
)
def test_gate_is_deterministic_and_explained(text: str, route: Route, reason: str) -> None:
    first = decide(text, GateOptions())
    assert (first.route, first.reason) == (route, reason)
    assert decide(text, GateOptions()) == first


def test_gate_modes_flags_and_thresholds() -> None:
    long_task = MULTI_STEP
    assert decide(long_task, GateOptions(mode="off")).route is Route.EXECUTOR_ONLY
    assert decide(long_task, GateOptions(mode="explicit")).reason == "mode_explicit_no_request"
    assert decide("fix it", GateOptions(mode="always")).reason == "mode_always"
    assert decide("ok", GateOptions(), plan=True).reason == "explicit_flag"
    assert decide(long_task, GateOptions(), plan=False).route is Route.EXECUTOR_ONLY
    assert decide("x", GateOptions(), plan_only=True).route is Route.PLAN_ONLY
    assert decide(long_task, GateOptions(threshold=99)).route is Route.EXECUTOR_ONLY
    assert decide(long_task, GateOptions(), planner_available=False).reason == "no_planner"
    assert decide(long_task, GateOptions(approve_plans=True)).route is Route.PLAN_FOR_APPROVAL


def test_controller_uses_the_sessions_it_is_given_even_when_empty() -> None:
    from reasonix.agent import Session
    from reasonix.testing import ScriptedProvider

    ex_session, pl_session = Session("executor"), Session("planner")
    ctrl = Controller(
        Options(
            executor_provider=ScriptedProvider([]),
            planner_provider=ScriptedProvider([]),
            executor_session=ex_session,
            planner_session=pl_session,
        )
    )
    assert ctrl.executor.session is ex_session
    assert ctrl.planner is not None
    assert ctrl.planner.session is pl_session


async def test_session_budget_stops_a_turn_and_refuses_the_next(tmp_path: Path) -> None:
    from reasonix.testing import ScriptedProvider

    prices = Prices(hit=0.0, miss=1_000_000.0, output=0.0)  # $1 per prompt token: easy sums
    usage = Usage(prompt_tokens=1, cache_hit_tokens=0, cache_miss_tokens=1)
    calls = [Reply.call("bash", {"command": f"echo {i}"}) for i in range(5)]
    executor = ScriptedProvider(
        [Reply(tool_calls=c.tool_calls, usage=usage) for c in calls],
        info=ModelInfo("m", prices=prices),
    )
    sink = CollectingSink()
    ctrl = Controller(
        Options(
            executor_provider=executor,
            tool_registry=workspace_tools(),
            executor_options=AgentOptions(workspace=tmp_path),
            sink=sink,
            orchestration=OrchestratorOptions(max_cost_usd=3.0),
        )
    )
    first = await ctrl.run_turn("echo things")
    assert first.stop_reason == "budget"
    assert "$3 budget" in first.text
    assert len(executor.requests) == 3  # stopped once the third request reached $3
    assert ctrl.cost_summary()["executor"].cost == pytest.approx(3.0)
    second = await ctrl.run_turn("more please")
    assert second.stop_reason == "budget"
    assert second.text.startswith("Not started")
    assert len(executor.requests) == 3  # nothing was sent
    assert not second.ok


async def test_session_budget_also_bounds_a_planning_round(tmp_path: Path) -> None:
    from reasonix.testing import ScriptedProvider

    prices = Prices(hit=0.0, miss=1_000_000.0, output=0.0)
    usage = Usage(prompt_tokens=1, cache_hit_tokens=0, cache_miss_tokens=1)
    reads = [Reply.call("read", {"path": "x.txt"}) for _ in range(6)]
    planner = ScriptedProvider(
        [Reply(tool_calls=r.tool_calls, usage=usage) for r in reads],
        info=ModelInfo("p", prices=prices),
    )
    executor = ScriptedProvider([], info=ModelInfo("e", prices=prices))
    (tmp_path / "x.txt").write_text("x")
    ctrl = Controller(
        Options(
            executor_provider=executor,
            planner_provider=planner,
            tool_registry=workspace_tools(),
            executor_options=AgentOptions(workspace=tmp_path),
            orchestration=OrchestratorOptions(max_cost_usd=2.0),
        )
    )
    result = await ctrl.run_turn("plan first: look around")
    assert result.stop_reason == "budget"
    assert result.text.startswith("Stopped after planning")
    assert len(planner.requests) == 2  # the planner was paused once it reached $2
    assert executor.requests == []


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
        + [Reply.text("gave up"), Reply.text("still stuck")]
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
    assert result.stop_reason == "plan_incomplete"
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
