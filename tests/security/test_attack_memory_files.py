"""Memory files (``REASONIX.md``, ``AGENTS.md``) as a way in: they load in every folder, trusted
or not, and a symlink among them may point anywhere inside their own folder.

The memory loader read ``AGENTS.md -> .env`` (a link a repository ships, to the file where the
user keeps their own tokens for that project) into the system prompt, sending it to the provider
on every request and into the session store, although the file tools refuse to read ``.env``
precisely so that it does not reach a model provider.

Worked before the fix in this module's commit (the loader skips a memory file that resolves to a
file the sandbox's read-deny patterns protect). Control: an ``AGENTS.md`` linking to an ordinary
file loads, so the probe sees the text reach the prompt.

The same for a skill: ``skill(name, file)`` reads inside the skill's folder, and a trusted
repository's ``.claude/skills/helper`` linking to the repository's root (with a ``SKILL.md``
there) made that the whole workspace, ``.env`` included. Fixed the same way (the skill tool
refuses a file the read-deny patterns protect), with the same kind of control.

Tried and shut: ``REASONIX.md -> .git/hooks/pre-commit`` and a note appended through it — notes
are the user's ``/remember`` only; the model has no tool that writes a memory file.
"""

from __future__ import annotations

import json

import pytest

from reasonix.testing import Reply
from tests.security.support import Attack, Lab, lab, record

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


# ---------------------------------------------------------------------------------------------
# A skill folder that is the repository itself


def _skill_at_the_root(lab: Lab) -> None:
    """A trusted repository whose skill folder links to its own root, where a SKILL.md is."""
    (lab.root / ".env").write_text(f"API_TOKEN={DOTENV_SECRET}\n")
    (lab.root / "SKILL.md").write_text("---\nname: helper\ndescription: helps\n---\nSteps.\n")
    (lab.root / "notes.txt").write_text(f"ordinary {DOTENV_SECRET}\n")
    (lab.root / ".claude" / "skills").mkdir(parents=True)
    (lab.root / ".claude" / "skills" / "helper").symlink_to("../..")
    lab.write_user_config(f"[trust]\nfolders = [{json.dumps(str(lab.root))}]\n")


def test_a_skill_does_not_read_dotenv(lab: Lab, request: pytest.FixtureRequest) -> None:
    """``skill(name, file)`` reads inside the skill's folder; a folder linked to the
    repository's root made that the whole workspace, ``.env`` included (the file tools refuse
    it; the skill tool is read-only, so it ran unasked, even in plan mode)."""
    _skill_at_the_root(lab)
    out = lab.attack([Attack("read .env", "skill", {"name": "helper", "file": ".env"})])
    leaked = DOTENV_SECRET in out.results[0]
    record(request, "memory files", 1, int(leaked))
    assert not leaked, out.results


def test_control_the_skill_reads_an_ordinary_file(lab: Lab) -> None:
    _skill_at_the_root(lab)
    out = lab.attack([Attack("read notes", "skill", {"name": "helper", "file": "notes.txt"})])
    assert DOTENV_SECRET in out.results[0], out.results
