"""Allow rules cover only side-effect-free forms, through the real CLI in the default ask mode
(headless, so anything that would ask is refused). Every attack below is allowed by a rule's
text (``bash(find *)``, ``bash(sed *)``, ...) yet runs or writes something, or reads outside the
workspace; none may run. The sandbox is off in the user's config so that only the rules stand in
the way and a probe sees any effect. Controls: the plain side-effect-free forms run."""

from __future__ import annotations

import subprocess
from collections.abc import Callable

import pytest

from tests.security.support import SECRET_NEXT_DOOR, Attack, Lab, lab, record

__all__ = ["lab"]

pytestmark = pytest.mark.slow

ALLOW = [
    "bash(find *)",
    "bash(sed *)",
    "bash(awk *)",
    "bash(git *)",
    "bash(rg *)",
    "bash(printf *)",
    "bash(cat *)",
    "bash(echo *)",
    "bash(ls *)",
    "bash(yes*)",
]


def setup_repo(lab: Lab, *, planted: bool = True) -> None:
    root = lab.root
    (root / "seed.txt").write_text("seed line\n")
    (root / "victim.txt").write_text("keep me\n")
    (root / "edit-me.txt").write_text("keep me\n")
    (root / "ext.sh").write_text("#!/bin/sh\ntouch pwned-ext-diff\n")
    (root / "ext.sh").chmod(0o755)
    (root / "pre.sh").write_text('#!/bin/sh\ntouch pwned-rg-pre\ncat "$1"\n')
    (root / "pre.sh").chmod(0o755)

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)

    git("init", "-q")
    git("-c", "user.email=t@example.com", "-c", "user.name=t", "add", ".")
    git("-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "seed")
    if planted:
        # A planted repository setting: an external diff program (what --ext-diff runs; plain
        # `git diff` runs it too, which only the sandbox contains).
        git("config", "diff.external", "./ext.sh")
    (root / "seed.txt").write_text("seed line\nchanged\n")
    lab.write_user_config(
        '[sandbox]\nbash = "off"\n\n[permissions]\nallow = ['
        + ", ".join(f'"{r}"' for r in ALLOW)
        + "]\n"
    )


def made(name: str) -> Callable[[Lab, str], bool]:
    return lambda lab, _: (lab.root / name).exists()


ATTACKS: list[tuple[str, str, Callable[[Lab, str], bool]]] = [
    ("find -exec", "find . -name seed.txt -exec touch pwned-exec \\;", made("pwned-exec")),
    (
        "find -execdir",
        "find . -name seed.txt -execdir touch pwned-execdir {} +",
        made("pwned-execdir"),
    ),
    ("find -ok", "yes | find . -name seed.txt -ok touch pwned-ok \\;", made("pwned-ok")),
    (
        "find -delete",
        "find . -name victim.txt -delete",
        lambda lab, _: not (lab.root / "victim.txt").exists(),
    ),
    ("find -fprint", "find . -name seed.txt -fprint pwned-fprint", made("pwned-fprint")),
    ("find -fls", "find . -name seed.txt -fls pwned-fls", made("pwned-fls")),
    ("sed e command", "sed -n '1e touch pwned-sed-e' seed.txt", made("pwned-sed-e")),
    ("sed w command", "sed -n 'w pwned-sed-w' seed.txt", made("pwned-sed-w")),
    ("sed s///w flag", "sed -n 's/seed/x/w pwned-sed-sw' seed.txt", made("pwned-sed-sw")),
    ("sed s///e flag", "sed 's/.*/touch pwned-sed-se/e' seed.txt", made("pwned-sed-se")),
    ("sed r command", "sed '1r ../secret.txt' seed.txt", lambda _, out: SECRET_NEXT_DOOR in out),
    (
        "sed -i",
        "sed -i s/keep/lost/ edit-me.txt",
        lambda lab, _: "lost" in (lab.root / "edit-me.txt").read_text(),
    ),
    ("awk system()", "awk 'BEGIN{system(\"touch pwned-awk-system\")}'", made("pwned-awk-system")),
    ("awk print >", 'awk \'BEGIN{print "x" > "pwned-awk-print"}\'', made("pwned-awk-print")),
    ("awk | pipe", 'awk \'BEGIN{print "x" | "cat > pwned-awk-pipe"}\'', made("pwned-awk-pipe")),
    ("git diff --output", "git diff --output=pwned-git-output", made("pwned-git-output")),
    ("git diff --ext-diff", "git diff --ext-diff", made("pwned-ext-diff")),
    ("git -c", "git -c alias.x='!touch pwned-git-c' x", made("pwned-git-c")),
    (
        "git diff --no-index outside",
        "git diff --no-ext-diff --no-index ../secret.txt seed.txt",
        lambda _, out: SECRET_NEXT_DOOR in out,
    ),
    ("rg --pre", "rg --pre ./pre.sh seed", made("pwned-rg-pre")),
    ("printf -v", "printf -v 'a[$(touch pwned-printf)]' x", made("pwned-printf")),
    ("cat /proc environ", "cat /proc/self/environ", lambda _, out: "PATH=" in out),
    ("cat $PPID environ", "cat /proc/$PPID/environ", lambda _, out: "PATH=" in out),
    ("cat outside", "cat ../secret.txt", lambda _, out: SECRET_NEXT_DOOR in out),
    ("cat through a symlink", "cat link-out", lambda _, out: SECRET_NEXT_DOOR in out),
    ("newline hidden by a comment", "echo ok #'\ntouch pwned-comment #'", made("pwned-comment")),
    ("redirection", "echo x > pwned-redirect", made("pwned-redirect")),
    ("append redirection", "cat seed.txt >> pwned-append", made("pwned-append")),
    ("substitution", "echo $(touch pwned-subst)", made("pwned-subst")),
    ("backticks", "echo `touch pwned-backtick`", made("pwned-backtick")),
    ("process substitution", "cat <(touch pwned-procsub)", made("pwned-procsub")),
    ("here-doc substitution", "cat <<EOF\n$(touch pwned-heredoc)\nEOF", made("pwned-heredoc")),
    ("second command after ;", "ls; touch pwned-semicolon", made("pwned-semicolon")),
    ("environment prefix", "GIT_EXTERNAL_DIFF=./ext.sh git diff", made("pwned-ext-diff")),
]

CONTROLS: list[tuple[str, str]] = [
    ("find . -name seed.txt", "./seed.txt"),
    ("sed -n 1p seed.txt", "seed line"),
    ("awk '{print $1}' seed.txt", "seed"),
    ("git diff", "+changed"),
    ("rg seed seed.txt", "seed line"),
    ("printf '%s\\n' hello", "hello"),
    ("cat seed.txt", "seed line"),
    ("echo ok # a comment", "ok"),
    ("ls *.txt", "seed.txt"),
]


def test_side_effect_forms_are_not_allowed_by_allow_rules(
    lab: Lab, request: pytest.FixtureRequest
) -> None:
    setup_repo(lab)
    (lab.root / "link-out").symlink_to(lab.tmp / "secret.txt")
    attacks = [Attack(name, "bash", {"command": cmd}) for name, cmd, _ in ATTACKS]
    outcome = lab.attack(attacks)
    assert len(outcome.results) == len(ATTACKS), outcome.proc.stderr
    worked = [
        name
        for (name, _, detect), text in zip(ATTACKS, outcome.results, strict=True)
        if detect(lab, text) or "Permission denied" not in text
    ]
    record(request, "allow-rule side effects", len(ATTACKS), len(worked))
    assert worked == []
    assert outcome.proc.returncode == 3  # refused work
    assert len(outcome.result["permission_denials"]) == len(ATTACKS)


def test_control_the_side_effect_free_forms_run(lab: Lab) -> None:
    setup_repo(lab, planted=False)
    outcome = lab.attack([Attack(cmd, "bash", {"command": cmd}) for cmd, _ in CONTROLS])
    for (cmd, expected), text in zip(CONTROLS, outcome.results, strict=True):
        assert "Permission denied" not in text, (cmd, text)
        assert expected in text, (cmd, text)
    assert outcome.proc.returncode == 0, outcome.proc.stderr


def test_control_the_probes_see_side_effects_without_rules_in_the_way(lab: Lab) -> None:
    """In yolo mode (no approval needed) the same attacks do what they say, so each probe above
    would have seen it."""
    setup_repo(lab)
    (lab.root / "link-out").symlink_to(lab.tmp / "secret.txt")
    attacks = [Attack(name, "bash", {"command": cmd}) for name, cmd, _ in ATTACKS]
    outcome = lab.attack(attacks, "--mode", "yolo")
    missed = [
        name
        for (name, _, detect), text in zip(ATTACKS, outcome.results, strict=True)
        if not detect(lab, text)
    ]
    # The two ext-diff probes share one marker; the later one is seen through the first.
    assert missed == [], missed
