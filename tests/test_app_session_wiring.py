"""What the session façade wires at open, on a switch and at close, seen from outside: an asker
given at open answers the model's ``ask`` questions (also after ``/clear``); MCP tools past the
per-request limit are told at open; a turn's ``!`` command lines belong to that turn's
snapshots (rewinding the next turn leaves what they made); rewinding a turn that ran without a
planner empties the planner's conversation when the session was resumed with one; a connection
set-up that never ends does not keep the process alive. In-process against the fake DeepSeek
servers, real files, real git, a real stdio MCP server and a real child process."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

from reasonix.events import CollectingSink, NoticeEvent
from reasonix.mcp import McpServerConfig
from reasonix.store import SessionStore
from reasonix.testing import Reply
from reasonix.tools.ask import Answer, Question
from tests.support.cli import cli_env
from tests.support.questions import QUESTIONS
from tests.support.sessions import Servers, open_session

EXECUTOR_ONLY: dict[str, object] = {"planner.enabled": False}
MANY_TOOLS = Path(__file__).parent / "fixtures" / "mcp" / "many_tools.py"


class PickingAsker:
    """A frontend's question picker that picks the first option of every question."""

    def __init__(self) -> None:
        self.asked: list[list[str]] = []

    async def ask(self, questions: Sequence[Question]) -> Sequence[Answer] | None:
        self.asked.append([q.question for q in questions])
        return [Answer(q.question, (q.options[0].label,)) for q in questions]


async def test_an_asker_given_at_open_answers_the_models_questions_also_after_clear(
    tmp_path: Path, servers: Servers, store: SessionStore
) -> None:
    ex, _ = servers
    asker = PickingAsker()
    session = await open_session(tmp_path, servers, store, EXECUTOR_ONLY, asker=asker)
    try:
        for attempt in ("first", "after /clear"):
            ex.push(Reply.call("ask", {"questions": QUESTIONS}), Reply.text(f"SQLite ({attempt})"))
            outcome = await session.run_turn("set up the service")
            assert outcome.result.stop_reason == "done", attempt
            assert outcome.result.text == f"SQLite ({attempt})"
            assert session.pending_questions() == []
            answered = ex.last_request.messages[-1]
            assert answered["role"] == "tool"
            assert "Which database should the service use? -> SQLite" in answered["content"]
            assert "Which extras do you want? -> Metrics" in answered["content"]
            await session.history.clear()
    finally:
        await session.aclose()
    both = [q["question"] for q in QUESTIONS]
    assert asker.asked == [both, both]


async def test_without_an_asker_the_question_waits_for_the_next_input(
    tmp_path: Path, servers: Servers, store: SessionStore
) -> None:
    """The other side of the test above: no asker, no answer made up."""
    ex, _ = servers
    ex.push(Reply.call("ask", {"questions": QUESTIONS}))
    session = await open_session(tmp_path, servers, store, EXECUTOR_ONLY)
    try:
        outcome = await session.run_turn("set up the service")
        assert outcome.result.stop_reason == "needs_input"
        assert [q["question"] for q in session.pending_questions()] == [
            q["question"] for q in QUESTIONS
        ]
    finally:
        await session.aclose()


def _many_tools(count: int) -> McpServerConfig:
    return McpServerConfig(
        "many", command=sys.executable, args=(str(MANY_TOOLS), str(count)), trust_annotations=True
    )


async def test_mcp_tools_past_the_request_limit_are_told_when_the_session_opens(
    tmp_path: Path, servers: Servers, store: SessionStore
) -> None:
    told: dict[int, list[str]] = {}
    for count in (150, 5):
        sink = CollectingSink()
        folder = tmp_path / str(count)
        folder.mkdir()
        session = await open_session(
            folder, servers, store, EXECUTOR_ONLY, sink=sink, extra_mcp_servers=[_many_tools(count)]
        )
        try:
            assert session.mcp.status() and "many" in session.mcp.status()[0]
        finally:
            await session.aclose()
        notices = [e for e in sink.events if isinstance(e, NoticeEvent)]
        told[count] = [e.message for e in notices if e.code == "tool_overflow"]
    (notice,) = told[150]
    assert "128" in notice
    assert told[5] == []


async def test_rewinding_the_turn_after_a_command_keeps_what_its_shell_line_made(
    tmp_path: Path, servers: Servers, store: SessionStore
) -> None:
    """A custom command's ``!`` line runs inside the command's own turn: its snapshot belongs
    to that turn, so ``/rewind`` of the next turn leaves the file it made; rewinding the
    command's turn removes it."""
    ex, _ = servers
    user = tmp_path / "user-config"
    (user / "commands").mkdir(parents=True)
    (user / "commands" / "setup.md").write_text("Set up: !`echo made > made.txt && echo ok`\n")
    ws = tmp_path / "ws"
    ws.mkdir()
    env = {"REASONIX_CONFIG_DIR": str(user)}
    session = await open_session(
        ws, servers, store, {**EXECUTOR_ONLY, "permissions.mode": "yolo"}, environ_extra=env
    )
    try:
        assert "setup" in session.commands
        ex.push(Reply.text("set up"))
        outcome = await session.run_command("setup")
        assert outcome.result.text == "set up"
        assert ex.last_request.messages[-1]["content"].startswith("Set up: ok")
        assert (ws / "made.txt").read_text() == "made\n"

        ex.push(Reply.call("write_file", {"path": "b.txt", "content": "b\n"}), Reply.text("b"))
        await session.run_turn("write b")
        assert (ws / "b.txt").exists()

        text = session.history.rewind()
        assert "turn 2" in text
        assert not (ws / "b.txt").exists()
        assert (ws / "made.txt").read_text() == "made\n"

        session.history.rewind()
        assert not (ws / "made.txt").exists()
    finally:
        await session.aclose()


async def test_rewinding_an_executor_only_turn_after_resuming_with_the_planner_on(
    tmp_path: Path, servers: Servers, store: SessionStore
) -> None:
    """The planner had no conversation when turn 1 started (it was off): rewinding turn 1
    after a resume with the planner on leaves the planner's conversation empty."""
    ex, pl = servers
    ex.push(Reply.text("one"))
    session = await open_session(tmp_path, servers, store, EXECUTOR_ONLY)
    try:
        await session.run_turn("first, without a planner")
        session_id = session.session_id
    finally:
        await session.aclose()

    pl.push(Reply.call("submit_plan", {"objective": "Note", "steps": [{"title": "Write it"}]}))
    session = await open_session(tmp_path, servers, store, resume_id=session_id)
    try:
        assert session.model_of("planner") is not None
        outcome = await session.run_turn("now plan a note", plan=True, plan_only=True)
        assert session.pending_plan is not None, outcome.result.text
        assert session.message_count("planner") > 0
        text = session.history.rewind(1)
        assert "turn 1" in text
        assert session.message_count("executor") == 0
        assert session.message_count("planner") == 0
        assert store.load_messages(session_id, "planner") == []
    finally:
        await session.aclose()


_BLOCKED_PREPARE = """
import asyncio, sys, threading
from pathlib import Path
from reasonix.app import AgentSession
from reasonix.config import load_config
from reasonix.store import SessionStore
from reasonix.testing import Reply, ScriptedProvider

class StuckConnect(ScriptedProvider):
    def prepare(self):
        threading.Event().wait()  # a TLS set-up that never finishes

async def main():
    ws = Path(sys.argv[1])
    config = load_config(ws, overrides={"planner.enabled": False}, environ={},
                         user_config=ws / "none.toml")
    with SessionStore(ws / "data" / "sessions.db") as store:
        session = await AgentSession.open(
            config, ws, store=store, environ={},
            provider_factory=lambda role, cfg: StuckConnect([Reply.text("hi")]),
        )
        outcome = await session.run_turn("hello")
        await session.aclose()
    print(outcome.result.text, flush=True)

asyncio.run(main())
"""


def test_a_connection_set_up_that_never_ends_does_not_keep_the_process_alive(
    tmp_path: Path,
) -> None:
    """The providers' clients are built in a background thread while the user types; the
    process still exits when the session is done, whatever that thread is waiting for."""
    script = tmp_path / "stuck.py"
    script.write_text(textwrap.dedent(_BLOCKED_PREPARE))
    ws = tmp_path / "ws"
    ws.mkdir()
    try:
        proc = subprocess.run(
            [sys.executable, str(script), str(ws)],
            capture_output=True,
            text=True,
            timeout=120,  # a hang, not a slow machine: the run itself takes about a second
            env=cli_env(tmp_path / "data", tmp_path / "cfg"),
        )
    except subprocess.TimeoutExpired as exc:
        raise AssertionError("the process did not exit after the session closed") from exc
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "hi"
