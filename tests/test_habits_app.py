"""Issue 28, the app's habits from Claude Code and Codex, in a pseudo-terminal (pexpect) against
fake servers: ``!cmd`` runs through the permission engine and the sandbox and its output joins
the next message without a request of its own; ``#note`` is kept in the project's memory."""

from __future__ import annotations

import re
import shutil
import sys

import pytest

from reasonix.safety.permissions import UNASKED_MODES, Mode, next_mode
from reasonix.testing import Reply
from tests.support.interactive import quit_app, spawn
from tests.support.project import Project, project
from tests.support.tui import Terminal

__all__ = ["project"]

BACK_TAB = "\x1b[Z"  # what a terminal sends for Shift+Tab

pytestmark = [
    pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty"),
    pytest.mark.slow,
]


def last_user_text(project: Project) -> str:
    message = project.ex.requests[-1].messages[-1]
    assert message["role"] == "user"
    content = message["content"]
    assert isinstance(content, str)
    return content


def test_bang_runs_a_command_and_its_output_joins_the_next_message(project: Project) -> None:
    project.write_user_config('[permissions]\nallow = ["bash(ls*)"]\n')
    (project.root / "listed-marker-71.txt").write_text("x\n")
    project.ex.push(Reply.text("I see the marker file."))
    child = spawn(project)
    try:
        child.expect("›")
        child.sendline("!ls")
        child.expect(r"\$ ls")
        child.expect("listed-marker-71.txt")
        child.expect("joins your next message")
        child.expect("›")
        # Nothing was sent: the command was no prompt of its own.
        assert project.ex.requests == []
        assert project.pl.requests == []
        child.sendline("what is in the folder?")
        child.expect("I see the marker file.")
        child.expect("›")
        quit_app(child)
    finally:
        child.close(force=True)
    assert len(project.ex.requests) == 1
    text = last_user_text(project)
    # The user's words first, the command's output at the tail (the cached prefix is kept).
    assert text.startswith("what is in the folder?")
    assert "[The user ran a command in the shell." in text and "$ ls\n" in text
    assert text.index("listed-marker-71.txt") > text.index("what is in the folder?")


def test_bang_asks_like_a_bash_call_and_a_denial_runs_nothing(project: Project) -> None:
    victim = project.root / "victim.txt"
    victim.write_text("keep me\n")
    project.ex.push(Reply.text("Nothing to add."))
    child = spawn(project)
    try:
        child.expect("›")
        child.sendline("!rm victim.txt")
        child.expect("approval needed")
        child.expect("rm victim.txt")
        child.expect(r"Allow\?")
        child.sendline("n")
        child.expect("Permission denied for bash")
        child.expect("›")
        assert victim.exists()
        child.sendline("!rm victim.txt")
        child.expect(r"Allow\?")
        child.sendline("y")
        child.expect("joins your next message")
        child.expect("›")
        assert not victim.exists()
        assert project.ex.requests == []
        child.sendline("done?")
        child.expect("Nothing to add.")
        child.expect("›")
        quit_app(child)
    finally:
        child.close(force=True)
    text = last_user_text(project)
    # Only the command that ran joins the message; the refused one left nothing behind.
    assert text.count("$ rm victim.txt") == 1


def test_bang_is_refused_by_a_deny_rule_without_asking(project: Project) -> None:
    project.write_toml('[permissions]\ndeny = ["bash(rm *)"]\n')
    victim = project.root / "victim.txt"
    victim.write_text("keep me\n")
    child = spawn(project)
    try:
        child.expect("›")
        child.sendline("!rm victim.txt")
        child.expect("blocked by the deny rule")
        child.expect("›")
        quit_app(child)
    finally:
        child.close(force=True)
    assert "approval needed" not in (child.before or "")
    assert victim.exists()
    assert project.ex.requests == []


def test_hash_note_is_remembered_and_reaches_the_model(project: Project) -> None:
    project.ex.push(Reply.text("Noted."), Reply.text("Using pytest."))
    child = spawn(project)
    try:
        child.expect("›")
        child.sendline("#always use pytest NOTE-MARKER-83")
        child.expect("Remembered in")
        child.expect("REASONIX.md")
        child.expect("›")
        assert project.ex.requests == []
        child.sendline("hello")
        child.expect("Noted.")
        child.expect("›")
        quit_app(child)
    finally:
        child.close(force=True)
    memory = (project.root / "REASONIX.md").read_text()
    assert "- always use pytest NOTE-MARKER-83" in memory
    # This session: at the tail of the next user message (its system prompt is unchanged).
    text = last_user_text(project)
    assert text.startswith("hello")
    assert "NOTE-MARKER-83" in text
    assert "NOTE-MARKER-83" not in project.ex.requests[0].messages[0]["content"]
    # A new session: in its system prompt, from the memory file.
    proc = project.run("run", "which test runner?")
    assert proc.returncode == 0, proc.stderr
    assert "NOTE-MARKER-83" in project.ex.requests[-1].messages[0]["content"]


@pytest.mark.parametrize("sandbox", ["auto", "off"])
def test_bang_runs_in_the_sandbox(project: Project, sandbox: str) -> None:
    # The sandbox hides the workspace's parents from a command; switched off (the control),
    # the same command reads the file planted beside the project.
    if sandbox == "auto" and shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed")
    project.write_user_config(f'[sandbox]\nbash = "{sandbox}"\n')
    (project.root.parent / "outside-71.txt").write_text("OUTSIDE-CONTENT-71\n")
    child = spawn(project)
    try:
        child.expect("›")
        child.sendline("!cat ../outside-71.txt")
        child.expect(r"Allow\?")
        child.sendline("y")
        child.expect("joins your next message")
        shown = child.before or ""
        child.expect("›")
        quit_app(child)
    finally:
        child.close(force=True)
    if sandbox == "off":
        assert "OUTSIDE-CONTENT-71" in shown
    else:
        assert "OUTSIDE-CONTENT-71" not in shown
        assert "No such file" in shown


def toolbar_mode(term: Terminal, mode: str) -> str:
    """Wait until the idle toolbar begins with ``mode``; the screen then."""
    return term.wait(lambda screen: any(r.strip().startswith(f"{mode} │") for r in term.rows()))


def test_shift_tab_cycles_the_modes_in_the_toolbar(project: Project) -> None:
    term = Terminal(project)
    try:
        term.ready()
        toolbar_mode(term, "ask")
        # Every mode in the Mode list but yolo (not started in it): ask → auto-edit → plan → ask.
        order = [m.value for m in Mode if m not in UNASKED_MODES]
        start = order.index("ask")
        for mode in order[start + 1 :] + order[: start + 1]:
            term.send(BACK_TAB)
            toolbar_mode(term, mode)
        assert "yolo │" not in term.text()
        # The engine's mode changed, not just the text: plan mode refuses a writing command.
        while not any(r.strip().startswith("plan │") for r in term.rows()):
            term.send(BACK_TAB)
            term.pump(0.3)
        term.sendline("!touch made-in-plan-mode")
        term.wait("plan mode is read-only")
        assert not (project.root / "made-in-plan-mode").exists()
        term.sendline("/mode")
        term.wait("Permission mode: plan")
    finally:
        term.close()
    assert project.ex.requests == []


def cycle_from(start: str) -> list[Mode]:
    """The modes Shift+Tab visits from ``start`` until it is back there."""
    seen, mode = [], next_mode(start, start)
    while mode is not Mode(start):
        seen.append(mode)
        mode = next_mode(mode, start)
    return seen


def test_shift_tab_reaches_yolo_only_from_a_yolo_start() -> None:
    from_ask = cycle_from("ask")
    assert Mode.YOLO not in from_ask
    assert set(from_ask) | {Mode.ASK} == set(Mode) - {Mode.YOLO}
    # Started in yolo (the user chose it by name), it stays in the cycle.
    assert set(cycle_from("yolo")) | {Mode.YOLO} == set(Mode)


def test_shift_tab_during_a_turn_reaches_the_watcher() -> None:
    from reasonix.cli.interactive import KeyWatcher

    pressed: list[str] = []
    keys = KeyWatcher(lambda: None, lambda: None, lambda: pressed.append("mode"))
    keys.feed(BACK_TAB.encode() + b"ab\x1b[A")
    assert pressed == ["mode"]
    assert keys.typed == "ab"


def test_escape_escape_picks_a_turn_to_rewind_to(project: Project) -> None:
    project.write_toml('[permissions]\nmode = "auto-edit"\n')
    project.ex.push(
        Reply.call("write_file", {"path": "first.txt", "content": "one\n"}),
        Reply.text("Wrote first.txt."),
        Reply.call("write_file", {"path": "second.txt", "content": "two\n"}),
        Reply.text("Wrote second.txt."),
        Reply.text("Starting over."),
    )
    child = spawn(project)
    try:
        child.expect("›")
        child.sendline("write the first file")
        child.expect("Wrote first.txt.")
        child.expect("›")
        child.sendline("write the second file")
        child.expect("Wrote second.txt.")
        child.expect("›")
        child.send("\x1b\x1b")
        child.expect("Rewind to before which turn")
        child.expect("turn 2: write the second file")
        child.expect("turn 1: write the first file")
        child.send("2")  # the second entry: turn 1
        child.expect("Rewound to before turn 1")
        child.expect("›")
        assert not (project.root / "first.txt").exists()
        assert not (project.root / "second.txt").exists()
        child.sendline("try again")
        child.expect("Starting over.")
        child.expect("›")
        quit_app(child)
    finally:
        child.close(force=True)
    # The conversation went back too: the new request holds only the new turn.
    messages = project.ex.requests[-1].messages
    assert [m["role"] for m in messages] == ["system", "user"]
    assert messages[-1]["content"].startswith("try again")


def test_escape_escape_dismissed_rewinds_nothing(project: Project) -> None:
    project.ex.push(Reply.text("Hello."))
    child = spawn(project)
    try:
        child.expect("›")
        child.sendline("hi")
        child.expect("Hello.")
        child.expect("›")
        child.send("\x1b\x1b")
        child.expect("Rewind to before which turn")
        child.send("\x1b")
        child.expect("Nothing was rewound.")
        child.expect("›")
        child.sendline("/turns")
        child.expect(r"1\s+hi")
        quit_app(child)
    finally:
        child.close(force=True)


def test_escape_escape_during_a_turn_still_interrupts() -> None:
    from reasonix.cli.interactive import KeyWatcher

    escapes: list[str] = []
    keys = KeyWatcher(lambda: escapes.append("esc"), lambda: None)
    keys.feed(b"\x1b\x1b")  # both in one read: not taken for Alt+Esc
    assert escapes


def test_slash_opens_the_command_menu_at_once(project: Project) -> None:
    term = Terminal(project)
    try:
        term.ready()
        term.send("/")
        # No Tab: the menu of the command table opens as the slash is typed, with help lines.
        # The menu can reach the screen in more than one write, so each check waits for the
        # whole of what it expects (a wait that never sees it fails the test).
        term.wait(
            lambda text: (
                re.search(r"/help\s+this help", text) is not None
                and re.search(r"/status\s+session, models", text) is not None
            )
        )
        term.send("res")
        term.wait(  # narrowed to what matches
            lambda text: (
                re.search(r"/resume \[ID\]\s+switch to a stored session", text) is not None
                and "/help" not in text.split("›", 1)[-1]
            )
        )
        term.send("\x15")  # Ctrl-U: clear the line
        term.sendline("/help")
        term.wait(r"/exit\s+quit")
        assert "Shift+Tab cycles the permission modes" in term.log
    finally:
        term.close()


def stored_session(project: Project, task: str) -> str:
    project.ex.push(Reply.text(f"Answered: {task}."))
    proc = project.run("run", task)
    assert proc.returncode == 0, proc.stderr
    from reasonix.store import SessionStore

    with SessionStore(project.data / "sessions.db") as store:
        return next(i.id for i in store.list_sessions() if i.title == task)


def test_resume_without_an_id_picks_a_session(project: Project) -> None:
    first = stored_session(project, "the first stored task")
    stored_session(project, "the second stored task")
    project.ex.push(Reply.text("Continuing the first."))
    child = spawn(project)
    try:
        child.expect("›")
        child.sendline("/resume")
        child.expect("Resume which session")
        child.expect("the second stored task")  # most recent first
        child.expect("the first stored task")
        child.send("2")
        child.expect(f"Resumed {first}")
        child.expect("the first stored task")  # the recap of the resumed session
        child.expect("›")
        child.sendline("and now?")
        child.expect("Continuing the first.")
        child.expect("›")
        quit_app(child)
    finally:
        child.close(force=True)
    # The request continued the picked conversation.
    contents = [m.get("content") for m in project.ex.requests[-1].messages]
    assert any(isinstance(c, str) and c.startswith("the first stored task") for c in contents)
    assert not any(isinstance(c, str) and "the second stored task" in c for c in contents)


def test_resume_completes_session_ids(project: Project) -> None:
    first = stored_session(project, "a task to find again")
    term = Terminal(project)
    try:
        term.ready()
        term.wait("new session")  # the session is open: it knows the folder's sessions
        term.send("/resume ")
        screen = term.wait(re.escape(first))
        row = next(r for r in screen.splitlines() if first in r)
        assert "a task to find again" in row  # the id with its title
        term.send(first[:4])
        term.send("\t")  # the one id that starts so, highlighted
        term.send("\r")  # Enter takes it
        term.wait(lambda _: any(r.startswith(f"› /resume {first}") for r in term.rows()))
        term.send("\r")
        term.wait(f"Resumed {re.escape(first)}")
    finally:
        term.close()
