"""Variants against the fingerprint of a remembered "yes" (issue 24's class 5), through the real
``reasonix run``.

Claude Code's convention keeps hook scripts in ``.claude/hooks/`` and names them from
``.claude/settings.json`` (``"command": "sh .claude/hooks/check.sh"``). The fingerprint hashed
the settings file and the commands, skills and agents folders, not ``.claude/hooks/``: after one
"yes", a ``git pull`` that changes the script changes what the hook runs, and the next start ran
the new script outside the sandbox without asking again.

Worked on main when written, fixed in this module's commit (``.claude/hooks`` is hashed like the
other folders we load from). Controls: before the change the hook runs (the probe sees it), and
after a "yes" to the changed script plus a change to a file nothing loads, it runs again.

Still open and recorded elsewhere: a script a hook or server names anywhere else in the work
tree (``test_attack_config_named_scripts.py``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reasonix.config.trust import TRUST_FILE, TrustStore
from reasonix.testing import Reply
from tests.security.support import Lab, lab, record

__all__ = ["lab"]

pytestmark = pytest.mark.slow


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _remembered(lab: Lab) -> None:
    hook = {"type": "command", "command": "sh .claude/hooks/check.sh"}
    settings = {"hooks": {"SessionStart": [{"hooks": [hook]}]}}
    _write(lab.root / ".claude" / "settings.json", json.dumps(settings))
    _write(lab.root / ".claude" / "hooks" / "check.sh", "touch ../hook-ran\n")
    _write(lab.root / "README.md", "an ordinary file\n")
    assert TrustStore(lab.config_dir / TRUST_FILE).remember(lab.root) is None


def _start(lab: Lab) -> None:
    """One ``reasonix run`` in the folder (its SessionStart hooks run if it is trusted)."""
    lab.ex.push(Reply.text("hello"))
    proc = lab.cli("run", "--no-planner", "hello")
    assert proc.returncode == 0, proc.stderr


def test_changing_a_hook_script_in_claude_hooks_asks_again(
    lab: Lab, request: pytest.FixtureRequest
) -> None:
    _remembered(lab)
    _start(lab)
    assert (lab.tmp / "hook-ran").exists()  # trusted: the hook runs
    _write(lab.root / ".claude" / "hooks" / "check.sh", "touch ../changed-hook-ran\n")
    _start(lab)
    ran = (lab.tmp / "changed-hook-ran").exists()
    record(request, "consent", 1, int(ran))
    assert not ran, "the changed script ran without a new question"


def test_control_a_file_nothing_loads_keeps_the_trust(lab: Lab) -> None:
    _remembered(lab)
    _write(lab.root / "README.md", "changed\n")
    (lab.root / ".claude" / "hooks" / "check.sh").write_text("touch ../still-trusted-ran\n")
    TrustStore(lab.config_dir / TRUST_FILE).remember(lab.root)  # the user said yes to this
    _write(lab.root / "README.md", "changed again\n")
    _start(lab)
    assert (lab.tmp / "still-trusted-ran").exists()
