"""The broad rules "allow for this session" now proposes (issue 27: ``bash(git grep *)`` after
``git grep TODO``), attacked with the short or other-named forms of options the rules engine
already refuses to cover in their long form, through the real CLI in the default ask mode
(headless: nobody to ask, so what the rule does not cover is refused).

- ``git grep -O<cmd>`` (the pager attached to the option, or after other flags: ``-nO<cmd>``)
  runs ``<cmd>`` on the matching files; ``-O <cmd>`` and ``--open-files-in-pager`` were refused;
- ``git archive -o FILE`` overwrites ``FILE``; ``--output`` was refused;
- ``git difftool --extcmd=<cmd>`` runs ``<cmd>``; ``-x`` was refused.

Each worked before the fix in this module's commit (the rules engine reads those forms too).
The rule in each case is the one the approval proposes for a harmless command of the same
subcommand (checked here). The control runs the same line approved (``--yes``) and proves the
probe sees the effect.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from reasonix.app.approvals import proposed_session_rules
from reasonix.safety.permissions import ApprovalRequest, Mode
from tests.security.support import record
from tests.support.rules_lab import RulesLab, rules_lab

pytestmark = pytest.mark.slow

Lab = RulesLab


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=root,
        check=True,
        capture_output=True,
    )


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Lab]:
    with rules_lab(tmp_path) as made:
        _git(made.root, "init", "-q")
        _git(made.root, "add", ".")
        _git(made.root, "commit", "-qm", "init")
        (made.root / "README").write_text("hello\nchanged\n")  # a difference for difftool
        yield made


def _pwned(root: Path) -> bool:
    return (root / "PWNED").exists()


def _victim_changed(root: Path) -> bool:
    return (root / "victim").read_text(errors="replace") != "keep me\n"


#: (harmless command approved for the session, the rule it proposes, the hostile line, probe)
CASES = [
    ("git grep hello", "bash(git grep *)", "git grep -Otouch\\ PWNED hello", _pwned),
    ("git grep hello", "bash(git grep *)", "git grep -nOtouch\\ PWNED hello", _pwned),
    ("git archive HEAD", "bash(git archive *)", "git archive -o victim HEAD", _victim_changed),
    ("git difftool -y", "bash(git difftool *)", "git difftool -y --extcmd='touch PWNED'", _pwned),
]
IDS = ["grep-O-attached", "grep-cluster-O", "archive-o", "difftool-extcmd"]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_a_proposed_session_rule_does_not_cover_a_short_form(
    lab: Lab, case: tuple[str, str, str, object], request: pytest.FixtureRequest
) -> None:
    harmless, rule, hostile, worked = case
    asked = ApprovalRequest("bash", "bash", {"command": harmless}, harmless, "", (), Mode.ASK)
    assert rule in proposed_session_rules(asked)  # what the user would have accepted
    lab.user_config(f'allow = ["{rule}"]')
    proc = lab.bash(hostile)
    assert callable(worked)
    broke = bool(worked(lab.root))
    record(request, "session rules (option forms)", 1, int(broke))
    assert not broke, proc.stdout


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_control_the_same_line_approved_has_the_effect(
    lab: Lab, case: tuple[str, str, str, object]
) -> None:
    _, _, hostile, worked = case
    lab.user_config("")
    proc = lab.bash(hostile, "--yes")
    assert callable(worked)
    assert worked(lab.root), f"the probe cannot see the effect: {proc.stdout}"
