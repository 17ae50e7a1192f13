"""Memory files (``REASONIX.md``, ``AGENTS.md``) as a way in: they load in every folder, trusted
or not, and a symlink among them may point anywhere inside their own folder.

The memory loader read ``AGENTS.md -> .env`` (a link a repository ships, to the file where the
user keeps their own tokens for that project) into the system prompt, sending it to the provider
on every request and into the session store, although the file tools refuse to read ``.env``
precisely so that it does not reach a model provider.

Worked before the fix in this module's commit (the loader skips a memory file that resolves to a
file the sandbox's read-deny patterns protect). Control: an ``AGENTS.md`` linking to an ordinary
file loads, so the probe sees the text reach the prompt.

Tried and shut: ``REASONIX.md -> .git/hooks/pre-commit`` and a note appended through it — notes
are the user's ``/remember`` only; the model has no tool that writes a memory file.
"""

from __future__ import annotations

import pytest

from reasonix.testing import Reply
from tests.security.support import Lab, lab, record

__all__ = ["lab"]

pytestmark = pytest.mark.slow

DOTENV_SECRET = "dotenv-secret-of-the-user-5e11"


def _system_prompt(lab: Lab) -> str:
    lab.ex.push(Reply.text("hello"))
    proc = lab.cli("run", "--no-planner", "hi")
    assert proc.returncode == 0, proc.stderr
    return str(lab.ex.requests[-1].messages[0]["content"])


def test_a_memory_link_to_dotenv_does_not_reach_the_model(
    lab: Lab, request: pytest.FixtureRequest
) -> None:
    (lab.root / ".env").write_text(f"API_TOKEN={DOTENV_SECRET}\n")
    (lab.root / "AGENTS.md").symlink_to(".env")
    leaked = DOTENV_SECRET in _system_prompt(lab)
    record(request, "memory files", 1, int(leaked))
    assert not leaked


def test_control_a_memory_link_to_an_ordinary_file_loads(lab: Lab) -> None:
    (lab.root / "conventions.md").write_text(f"use tabs {DOTENV_SECRET}\n")
    (lab.root / "AGENTS.md").symlink_to("conventions.md")
    assert DOTENV_SECRET in _system_prompt(lab)
