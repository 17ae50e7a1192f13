""" "Allow for this session" on an edit (issue 27) proposes ``edit(**)``: every file edit in the
workspace, files that make code run later still asking. Attacked in the real interactive app (a
pseudo-terminal read off an emulated screen): after the user allows one edit of ``calc.py`` for
the session, the model

- writes ``.mcp.json`` (must still ask: our own configuration): it was written unasked; fixed
  in this module's commit;
- deletes ``victim.txt`` with ``delete_file`` (a deletion, which auto-edit mode itself never
  allows unasked; the rule's category ``edit`` names the delete tool too): it ran unasked;
  fixed in this module's commit (a session rule covers a destroying tool only by its name).

The control answers the same questions with yes and sees both happen, so the probes can see a
break; and without the session rule the delete asks (``n``), so the probe tells the two apart.
"""

from __future__ import annotations

import sys

import pytest

from reasonix.testing import Reply
from tests.security.support import record
from tests.support.project import Project, project
from tests.support.tui import Terminal

__all__ = ["project"]

pytestmark = [
    pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty"),
    pytest.mark.slow,
]


def _ended(screen: str) -> bool:
    """The turn is over: the model's last answer, or the stop after refusals."""
    return "All done." in screen or "── refused" in screen


def _session(project: Project, answer: str, first: str = "a") -> list[str]:
    """One turn: an edit of calc.py answered ``first``, then a write of .mcp.json and a delete
    of victim.txt, each answered ``answer`` when asked. The tools that were asked about."""
    (project.root / "calc.py").write_text("x = 1\n")
    (project.root / "victim.txt").write_text("keep me\n")
    project.ex.push(
        Reply.call("edit_file", {"path": "calc.py", "old_string": "x = 1", "new_string": "x = 2"}),
        Reply.call("write_file", {"path": ".mcp.json", "content": "{}"}),
        Reply.call("delete_file", {"path": "victim.txt"}),
        Reply.text("All done."),
    )
    asked: list[str] = []
    term = Terminal(project)
    try:
        term.ready()
        term.sendline("change calc.py")
        term.wait(lambda s: "Allow?" in s)
        term.sendline(first)
        for _ in range(2):
            screen = term.wait(
                lambda s: _ended(s) or s.count("Allow?") > len(asked) + 1, timeout=60
            )
            if _ended(screen):
                break
            last = screen.rsplit("Allow?", 1)[0]
            asked.append("delete_file" if "victim.txt" in last[-400:] else "write_file")
            term.sendline(answer)
        term.wait(_ended)
    finally:
        term.close()
    return asked


def test_an_edit_allowed_for_the_session_does_not_write_our_config_unasked(
    project: Project, request: pytest.FixtureRequest
) -> None:
    """Worked before the fix in this module's commit: the approval path's second look at the
    session's rules (for a call that waited while another was approved) allowed what the
    rules engine had sent to be asked because it must be (a protected file)."""
    _session(project, "n")
    planted = (project.root / ".mcp.json").exists()
    record(request, "session edit rule", 1, int(planted))
    assert not planted


def test_an_edit_allowed_for_the_session_does_not_delete_files_unasked(
    project: Project, request: pytest.FixtureRequest
) -> None:
    _session(project, "n")
    deleted = not (project.root / "victim.txt").exists()
    record(request, "session edit rule", 1, int(deleted))
    assert not deleted, "delete_file ran unasked under the session's edit(**)"


def test_control_answered_yes_both_happen(project: Project) -> None:
    _session(project, "y")
    assert (project.root / ".mcp.json").exists()
    assert not (project.root / "victim.txt").exists()


def test_control_without_the_session_rule_the_delete_asks(project: Project) -> None:
    _session(project, "n", first="y")
    assert (project.root / "victim.txt").exists()
