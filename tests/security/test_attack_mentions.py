"""``@path`` mentions in the app as a way for a repository to send the user's secrets to the model.

A mention attaches the file it names to the user's turn, wherever the name resolves inside the
workspace. A repository that ships ``CONTRIBUTING.md -> .env`` (a link to the file where the user
keeps their own tokens for that checkout) turned "follow @CONTRIBUTING.md" into the user's
``.env`` in the request and in the session store, although the file tools refuse to read
``.env`` precisely so that it does not reach a model provider (the same class as the memory
file ``AGENTS.md -> .env``, test_attack_memory_files.py).

Worked before the fix in this module's commit (a mention that resolves to a file the read-deny
patterns protect is not attached; the app says so). Control: the same link to an ordinary file
is attached, so the probe sees a mentioned file's text reach the request.

Tried and shut: ``@shot.png -> ~/.ssh/id_rsa`` and ``@../outside.png`` (a mention resolving
outside the workspace is left as typed).
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

SECRET = "dotenv-secret-of-the-user-77c3"


def _mention(project: Project, target: str) -> str:
    """The user asks about ``@CONTRIBUTING.md`` (a link the repository ships to ``target``);
    what the request carried."""
    (project.root / "CONTRIBUTING.md").symlink_to(target)
    project.ex.push(Reply.text("Read it."))
    term = Terminal(project)
    try:
        term.ready()
        term.sendline("please follow @CONTRIBUTING.md")
        term.wait("Read it.")
    finally:
        term.close()
    return "\n".join(
        str(m.get("content"))
        for r in project.ex.requests
        for m in r.messages
        if m["role"] == "user"
    )


def test_a_mention_linked_to_dotenv_does_not_reach_the_model(
    project: Project, request: pytest.FixtureRequest
) -> None:
    (project.root / ".env").write_text(f"API_TOKEN={SECRET}\n")
    sent = _mention(project, ".env")
    leaked = SECRET in sent
    record(request, "mentions", 1, int(leaked))
    assert not leaked
    assert "please follow @CONTRIBUTING.md" in sent  # the words as typed still went


def test_control_a_mention_linked_to_an_ordinary_file_is_attached(project: Project) -> None:
    (project.root / "guide.txt").write_text(f"use tabs {SECRET}\n")
    assert SECRET in _mention(project, "guide.txt")
