"""What opening a session decides, each with the line that decides it: a new session unless
the last one is asked for, the confinement chosen from the configuration (never silently
"off"), and the refusal to run bash unasked and unconfined for an approver that says yes to
everything."""

from __future__ import annotations

from pathlib import Path

import pytest

from reasonix.app.goal import GoalRecorded
from reasonix.config import load_config
from reasonix.errors import ConfigError, SessionError
from reasonix.events import CollectingSink
from reasonix.safety.permissions import ApprovalAnswer, ApprovalRequest
from reasonix.store import SessionStore
from reasonix.testing import Reply
from tests.support.project import project_toml
from tests.support.sessions import ENV, Servers, open_session

#: no bubblewrap on this PATH: bash can only run unconfined
NO_BWRAP = {**ENV, "PATH": "/nonexistent"}


class Approves:
    """An approver with a person behind it (``unattended`` not set)."""

    async def approve(self, request: ApprovalRequest) -> ApprovalAnswer:
        return ApprovalAnswer("once")


class SaysYesToEverything(Approves):
    unattended = True


async def test_a_second_open_starts_a_new_session_unless_the_last_is_asked_for(
    tmp_path: Path, servers: Servers, store: SessionStore
) -> None:
    servers[0].push(Reply.text("first"))
    first = await open_session(tmp_path, servers, store)
    try:
        await (first.start_turn("hi")).result()
    finally:
        await first.aclose()
    again = await open_session(tmp_path, servers, store)
    try:
        assert again.session_id != first.session_id and not again.resumed
    finally:
        await again.aclose()
    last = await open_session(tmp_path, servers, store, continue_last=True)
    try:
        assert last.session_id == first.session_id and last.resumed
    finally:
        await last.aclose()


async def open_in(
    root: Path, servers: Servers, store: SessionStore, sandbox: str = "", **kwargs: object
):  # type: ignore[no-untyped-def]
    from reasonix.app import AgentSession

    (root / "user.toml").write_text(sandbox)
    (root / "reasonix.toml").write_text(project_toml(*servers))
    config = load_config(root, environ=NO_BWRAP, user_config=root / "user.toml")
    return await AgentSession.open(config, root, store=store, environ=NO_BWRAP, **kwargs)


async def test_the_session_runs_bash_under_the_configured_confinement(
    tmp_path: Path, servers: Servers, store: SessionStore
) -> None:
    session = await open_in(tmp_path, servers, store)
    try:
        assert session.bash.mode == "auto"
        assert session.bash.notice == "bash is NOT confined: bubblewrap (bwrap) is not installed"
        assert not session.bash.acknowledged
    finally:
        await session.aclose()
    off = await open_in(tmp_path, servers, store, '[sandbox]\nbash = "off"\n')
    try:
        assert off.bash.mode == "off" and off.bash.acknowledged
    finally:
        await off.aclose()


async def test_an_approver_that_says_yes_to_everything_needs_confinement(
    tmp_path: Path, servers: Servers, store: SessionStore
) -> None:
    with pytest.raises(ConfigError, match="--yes runs shell commands without asking"):
        await open_in(tmp_path, servers, store, approver=SaysYesToEverything())
    # an approver with a person behind it may open unconfined (each command is asked)
    asked = await open_in(tmp_path, servers, store, approver=Approves())
    await asked.aclose()
    # and so may the yes-to-everything one once the user accepted unconfined commands
    accepted = await open_in(
        tmp_path,
        servers,
        store,
        "[sandbox]\nallow_unconfined = true\n",
        approver=SaysYesToEverything(),
    )
    await accepted.aclose()


# -- what the façade answers ----------------------------------------------------------------------


async def test_models_of_the_roles(tmp_path: Path, servers: Servers, store: SessionStore) -> None:
    both = await open_session(tmp_path, servers, store)
    try:
        assert both.model_of("executor") == "deepseek-flash"
        assert both.model_of("planner") == "deepseek-v4-pro"
        assert both.model_of("nobody") is None
        assert both.models() == {"executor": "deepseek-flash", "planner": "deepseek-v4-pro"}
    finally:
        await both.aclose()
    alone = await open_session(tmp_path, servers, store, overrides={"planner.enabled": False})
    try:
        assert alone.model_of("planner") is None
        assert alone.models() == {"executor": "deepseek-flash"}
        with pytest.raises(SessionError, match="no 'planner' role to switch"):
            alone.switch_model("planner", "deepseek-flash")
    finally:
        await alone.aclose()


async def test_context_use_is_estimated_then_measured(
    tmp_path: Path, servers: Servers, store: SessionStore
) -> None:
    servers[0].push(Reply.text("measured"))
    session = await open_session(tmp_path, servers, store, overrides={"planner.enabled": False})
    try:
        (before,) = session.usage.context_use()
        assert (before.role, before.model) == ("executor", "deepseek-flash")
        assert before.context_window == 1_048_576
        await (session.start_turn("hi")).result()
        (after,) = session.usage.context_use()
        assert after.prompt_tokens == servers[0].requests[-1].prompt_tokens
        assert after.prompt_tokens > 0
    finally:
        await session.aclose()


async def test_switching_a_roles_model(
    tmp_path: Path, servers: Servers, store: SessionStore
) -> None:
    session = await open_session(tmp_path, servers, store)
    try:
        assert session.switch_model("executor", "deepseek-flash") == (
            "The executor already runs on deepseek-flash."
        )
        text = session.switch_model("executor", "deepseek-v4-pro")
        assert text.startswith("The executor now runs on deepseek-v4-pro (was deepseek-flash).")
        assert session.model_of("executor") == "deepseek-v4-pro"
        assert session.model_of("planner") == "deepseek-v4-pro"
        planner = session.switch_model("planner", "deepseek-flash")
        assert planner.startswith("The planner now runs on deepseek-flash (was deepseek-v4-pro).")
        assert session.models() == {"executor": "deepseek-v4-pro", "planner": "deepseek-flash"}
    finally:
        await session.aclose()


async def test_the_cost_table_adds_the_whole_session_only_when_resumed(
    tmp_path: Path, servers: Servers, store: SessionStore
) -> None:
    servers[0].push(Reply.text("one"), Reply.text("two"))
    first = await open_session(tmp_path, servers, store, overrides={"planner.enabled": False})
    try:
        await (first.start_turn("hi")).result()
        table = first.usage.cost_table()
        assert "executor" in table
        assert "Whole session" not in table and "Compaction saved" not in table
    finally:
        await first.aclose()
    again = await open_session(
        tmp_path, servers, store, overrides={"planner.enabled": False}, continue_last=True
    )
    try:
        # nothing measured yet in this run: the resumed history's size is the estimate
        (estimate,) = again.usage.context_use()
        assert estimate.prompt_tokens > 0
        await (again.start_turn("again")).result()
        assert "Whole session (all runs, USD):" in again.usage.cost_table()
    finally:
        await again.aclose()


async def test_the_balance_of_each_endpoint_once(
    tmp_path: Path, servers: Servers, store: SessionStore
) -> None:
    session = await open_session(tmp_path, servers, store)
    try:
        lines = (await session.usage.balance()).splitlines()
    finally:
        await session.aclose()
    assert len(lines) == 2  # executor and planner have their own servers here
    assert all(line.startswith("Balance: ") for line in lines)


async def test_a_goal_without_a_turn_cap_gets_the_configured_one(
    tmp_path: Path, servers: Servers, store: SessionStore
) -> None:
    servers[0].handler = lambda request: Reply.text("Working on it.")
    overrides = {"planner.enabled": False, "goals.max_turns": 2}
    sink = CollectingSink()
    session = await open_session(tmp_path, servers, store, overrides=overrides, sink=sink)
    try:
        with pytest.raises(SessionError, match="needs an objective"):
            session.goals.start("   ")
        turn = session.goals.start("write the notes")
        goal = session.goals.current
        assert goal is not None and goal.max_turns == 2
        await turn.result()
        assert goal.turns <= 2
        assert not goal.finished  # stopped by its turn cap: resumable, so no second goal yet
        with pytest.raises(SessionError, match="unfinished goal"):
            session.goals.start("another")
        resumed = session.goals.resume(budget_usd=5.0, max_turns=3)  # a limit may be raised
        assert (goal.budget_usd, goal.max_turns) == (5.0, 3)
        await resumed.result()
        assert session.goals.clear() != "No goal to clear."
        assert session.goals.current is None
        cleared = [e for e in sink.of_type(GoalRecorded) if e.cleared]
        assert len(cleared) == 1
    finally:
        await session.aclose()


async def test_no_goal_to_resume(tmp_path: Path, servers: Servers, store: SessionStore) -> None:
    session = await open_session(tmp_path, servers, store, overrides={"planner.enabled": False})
    try:
        with pytest.raises(SessionError, match="has no goal"):
            session.goals.resume()
        assert session.goals.pause() == "No goal is running."
    finally:
        await session.aclose()


async def test_a_turns_outcome_lists_the_refused_calls_only(
    tmp_path: Path, servers: Servers, store: SessionStore
) -> None:
    """No approver: what would ask is refused; what needs no question runs."""
    (tmp_path / "a.txt").write_text("alpha\n")
    servers[0].push(
        Reply.calls(
            ("read_file", {"path": "a.txt"}), ("write_file", {"path": "b.txt", "content": "x"})
        ),
        Reply.text("Read a; writing b was refused."),
    )
    session = await open_session(tmp_path, servers, store, overrides={"planner.enabled": False})
    try:
        outcome = await (session.start_turn("read a, write b")).result()
    finally:
        await session.aclose()
    assert [d.tool for d in outcome.denials] == ["write_file"]
    assert not (tmp_path / "b.txt").exists()


async def test_machine_facts_ride_once_on_a_new_conversations_first_message(
    tmp_path: Path, servers: Servers, store: SessionStore
) -> None:
    servers[0].push(Reply.text("one"), Reply.text("two"), Reply.text("three"))
    overrides = {"planner.enabled": False}
    session = await open_session(tmp_path, servers, store, overrides=overrides)
    try:
        await (session.start_turn("first")).result()
        await (session.start_turn("second")).result()
    finally:
        await session.aclose()
    resumed = await open_session(tmp_path, servers, store, overrides=overrides, continue_last=True)
    try:
        await (resumed.start_turn("third")).result()
    finally:
        await resumed.aclose()
    users = [m for m in servers[0].requests[-1].messages if m["role"] == "user"]
    with_facts = [m for m in users if f"- folder: {tmp_path}" in m["content"]]
    assert len(users) == 3 and with_facts == users[:1]


async def test_the_session_list_shows_the_twenty_most_recent(
    tmp_path: Path, servers: Servers, store: SessionStore
) -> None:
    from reasonix.app import AgentSession
    from reasonix.messages import UserMessage

    older = []
    for n in range(22):
        sid = store.create_session(tmp_path, title=f"old {n}")
        store.append_message(sid, "executor", 0, UserMessage(f"turn {n}"))
        older.append(sid)
    assert len(AgentSession.list_sessions(store, tmp_path)) == 20
    session = await open_session(tmp_path, servers, store)
    try:
        listed = session.history.sessions()
    finally:
        await session.aclose()
    assert len(listed) == 20


async def test_a_stop_hook_that_blocks_tells_the_model_its_reason_once(
    tmp_path: Path, servers: Servers, store: SessionStore
) -> None:
    """A Stop hook that blocks the end of a turn has the model go on, told the hook's reason
    as the next user message; the second stop (``stop_hook_active``) is let through."""
    import json
    import sys

    hook = tmp_path / "stop.py"
    hook.write_text(
        "import json, sys\n"
        "if not json.load(sys.stdin)['stop_hook_active']:\n"
        "    print(json.dumps({'decision': 'block', 'reason': 'Run the tests first.'}))\n"
    )
    command = json.dumps(f"{sys.executable} {hook}")
    hooks = f'[[hooks.Stop]]\nhooks = [{{ type = "command", command = {command} }}]\n'
    servers[0].push(Reply.text("Done, I think."), Reply.text("Tests pass now."))
    session = await open_in(tmp_path, servers, store, hooks)
    try:
        outcome = await session.start_turn("fix it", plan=False).result()
    finally:
        await session.aclose()
    assert outcome.result.text == "Tests pass now."
    assert len(servers[0].requests) == 2
    second = servers[0].requests[1].messages
    assert second[-1] == {"role": "user", "content": "Run the tests first."}


async def test_a_notification_hook_hears_of_each_question_the_approver_is_asked(
    tmp_path: Path, servers: Servers, store: SessionStore
) -> None:
    """With a person to ask, a ``Notification`` hook is told before each question; with no
    approver the same hooks change nothing: what would ask is refused, nobody is notified."""
    import json
    import sys

    log = tmp_path / "notified.txt"
    hook = tmp_path / "notify.py"
    hook.write_text(
        "import json, sys\n"
        f"with open({str(log)!r}, 'a') as out:\n"
        "    out.write(json.load(sys.stdin)['message'] + '\\n')\n"
    )
    command = json.dumps(f"{sys.executable} {hook}")
    hooks = f'[[hooks.Notification]]\nhooks = [{{ type = "command", command = {command} }}]\n'
    write = ("write_file", {"path": "b.txt", "content": "x"})
    servers[0].push(Reply.calls(write), Reply.text("written"))
    session = await open_in(tmp_path, servers, store, hooks, approver=Approves())
    try:
        asked = await session.start_turn("write b", plan=False).result()
    finally:
        await session.aclose()
    assert not asked.denials and (tmp_path / "b.txt").read_text() == "x"
    assert log.read_text() == "reasonix needs your permission to use write_file\n"
    log.unlink()
    (tmp_path / "b.txt").unlink()
    servers[0].push(Reply.calls(write), Reply.text("refused"))
    session = await open_in(tmp_path, servers, store, hooks)
    try:
        alone = await session.start_turn("write b", plan=False).result()
    finally:
        await session.aclose()
    assert [d.tool for d in alone.denials] == ["write_file"]
    assert not log.exists() and not (tmp_path / "b.txt").exists()


@pytest.mark.slow
async def test_mcp_status_and_problems_with_and_without_servers(
    tmp_path: Path, servers: Servers, store: SessionStore
) -> None:
    """What a frontend shows at start-up: nothing wrong and a hint when no MCP server is
    configured; a server that could not start is named as a problem."""
    from reasonix.mcp import McpServerConfig

    session = await open_session(tmp_path, servers, store)
    try:
        assert session.mcp.problems() == []
        assert session.mcp.status() == [
            "No MCP servers are configured ([[mcp.servers]] in reasonix.toml)."
        ]
        assert await session.mcp.restart("x") == "No MCP servers are configured."
        first = session.session_id
        await session.history.clear()  # a new conversation: no MCP snapshot to refresh
        assert session.session_id != first
    finally:
        await session.aclose()
    from reasonix.events import NoticeEvent

    sink = CollectingSink()
    crashed = await open_session(
        tmp_path,
        servers,
        store,
        sink=sink,
        extra_mcp_servers=[McpServerConfig("broken", command=str(tmp_path / "no-such-server"))],
    )
    try:
        (problem,) = crashed.mcp.problems()
        assert problem.startswith("MCP server broken") and "failed" in problem
    finally:
        await crashed.aclose()
    # no MCP tool at all: nothing to say about too many tools
    assert [e for e in sink.of_type(NoticeEvent) if e.code == "tool_overflow"] == []


async def test_a_plan_request_in_plan_mode_plans_and_stops(
    tmp_path: Path, servers: Servers, store: SessionStore
) -> None:
    """In plan mode nothing may change: ``/plan`` there plans, and the plan waits for the
    user instead of being handed to the read-only executor (which could only stall)."""
    plan = {
        "objective": "Tidy the build",
        "steps": [{"title": "Remove the build folder", "verify": "test ! -d build"}],
    }
    revised = {**plan, "steps": [*plan["steps"], {"title": "Run the tests", "verify": "true"}]}
    servers[1].push(Reply.call("submit_plan", plan), Reply.call("submit_plan", revised))
    session = await open_session(tmp_path, servers, store)
    try:
        session.set_mode("plan")
        outcome = await session.start_turn("tidy up", plan=True).result()
        assert outcome.result.stop_reason == "plan_only"
        assert session.pending_plan is not None
        # "n <change>": the planner (not the executor) revises, with the change asked for
        await session.revise_plan("also run the tests").result()
        assert len(servers[1].requests) == 2
        assert "also run the tests" in str(servers[1].requests[1].messages[-1]["content"])
    finally:
        await session.aclose()
    assert servers[0].requests == []
