"""Print every view's verdict on a corpus of command lines: the oracle a refactor of
``safety/shell/`` is diffed against (zero differences is the bar).

    .venv/bin/python scripts/shell_verdicts.py > /tmp/before.txt   # on main's code
    .venv/bin/python scripts/shell_verdicts.py > /tmp/after.txt    # after the change
    diff /tmp/before.txt /tmp/after.txt

The corpus: every short string literal in ``tests/`` (a table test's row, a command given to a
fake model), and lines generated from the programs the tables name crossed with options and
operands that each view treats differently. Per line it prints the forms deny rules see, the
allow side's obstacle, the effects (writes, off-host, unknown, redirects), the read-only proof
(confined and for a snapshot), the irreversible reason, and the session rules proposed. The
workspace is a fixed-layout temporary folder whose path is printed as ``<WS>``.
"""

from __future__ import annotations

import ast
import itertools
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from reasonix.app.approvals import proposed_session_rules  # noqa: E402
from reasonix.safety.permissions import ApprovalRequest  # noqa: E402
from reasonix.safety.shell import irreversible, programs, readers, rules  # noqa: E402
from reasonix.safety.shell.deletes import DELETERS  # noqa: E402
from reasonix.safety.shell.effects import broad_rule_ok, effects  # noqa: E402

_ARGS = (
    "", "-r", "-rf x", "-i x", "-n x", "-o out", "--output=x", "--out x", "-e 'p'", "-f f",
    "-c 'rm x'", "-C dir", "-x", "-v", "-l", "--help", "--version", "x", "../x", "/etc/passwd",
    "~/.bashrc", "a.txt b.txt", "*.txt", "$X", "$(id)", "-- -x", "--delete x", "--force",
    "-d x", "-p", "-u x", "-exec rm {} +", "-delete", "s/a/b/e", "'s/a/b/w x'", "1d",
    "-i.bak s/a/b/",
    "'{print > \"x\"}'", "'BEGIN{system(\"id\")}'", "'{print $1}' f", "-P cat",
    "-I gzip", "tf a.tar",
    "xf a.tar", "-T", "-TT 'sh -c x'", "--to-command=sh", "--checkpoint-action=exec=x", "push",
    "push --force", "push -f origin", "push origin +main", "push origin :b", "status", "log -p",
    "diff --output=x", "diff --ext-diff", "-c core.pager=x log", "config --get x", "config x y",
    "stash drop", "reflog expire", "gc --prune=now", "branch -D x", "clean -fdx", "grep -O x",
    "remote -v", "remote add o u", "clone -u x u", "archive -o x", "show HEAD", "rm -r x",
    "delete x", "s3 rm s3://b/x", "destroy", "volume rm v", "-X DELETE http://h", "--delete h:d/",
    "-c 'DROP TABLE t'", "uninstall x", "apply -destroy", "repo delete x", "unpublish x",
    "of=/etc/x if=/dev/zero", "-s 0 x", "> out", "2>/dev/null", "< /etc/passwd", "| sh",
    "&& rm -rf /", "; cat /etc/shadow",
)  # fmt: skip


_PATTERNS = ("rm -rf *", "rm *", "git push *", "sh *", "curl *", "find * -delete*", "*")


def _names() -> list[str]:
    names: set[str] = set(programs.READERS) | set(programs.PROGRAMS) | set(DELETERS)
    names |= set(rules._RUNS) | set(rules._CHECKS) | set(rules._VALUE_OPTS)
    names |= set(rules._SHELLS) | set(rules._OPAQUE_WRAPPERS)
    names |= set(irreversible._DESTROYERS) | set(irreversible._DB_CLIENTS)
    names |= {"git " + s for s in readers.GIT_READS} | {"git " + s for s in irreversible._GIT_SUBS}
    names |= {"eval", "exec", "source", "trap", "su", "chroot", "cd", "ls", "cat", "rm"}
    return sorted(names)


def _test_strings() -> list[str]:
    found: set[str] = set()
    for path in sorted((ROOT / "tests").rglob("*.py")):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                text = node.value
                if 0 < len(text) <= 300 and "\n" not in text.strip("\n") and text.isprintable():
                    found.add(text)
    return sorted(found)


def corpus() -> list[str]:
    generated = [f"{n} {a}".strip() for n, a in itertools.product(_names(), _ARGS)]
    return [*_test_strings(), *generated]


def _workspace(base: Path) -> Path:
    ws = base / "ws"
    (ws / "dir").mkdir(parents=True)
    for name in ("x", "a.txt", "b.txt", "f", "out"):
        (ws / name).write_text("x\n")
    return ws


def _safe(fn, *args, **kwargs) -> str:  # type: ignore[no-untyped-def]
    try:
        return repr(fn(*args, **kwargs))
    except Exception as exc:  # a crash is a verdict too
        return f"!{type(exc).__name__}"


def verdicts(line: str, ws: Path) -> str:
    fx = effects(line)
    forms = sorted(tuple("\0" if t is None else t for t in f) for f in rules.command_forms(line))
    steps = [(s.side_effects, s.runs_unknown, s.writes, s.off_host) for s in fx.steps]
    request = ApprovalRequest(
        tool="bash",
        category="bash",
        arguments={"command": line},
        subject=line,
        reason="",
        session_rules=(f"bash({line})",),
        mode="ask",  # type: ignore[arg-type]
    )
    words = line.split()
    parts = [
        f"forms={forms!r}",
        "allow=" + _safe(rules.allow_obstacle, fx.script, ws),
        "allow_unconfined=" + _safe(rules.allow_obstacle, fx.script, ws, confined=False),
        f"fx={fx.redirects!r},{fx.unknown!r},{fx.writes!r},{fx.off_host!r},{fx.parts!r}",
        f"steps={steps!r}",
        "ro=" + _safe(readers.read_only_obstacle, fx.script, ws),
        "skip=" + _safe(readers.read_only_obstacle, fx.script, ws, confined=False),
        "irrev=" + _safe(irreversible.irreversible_reason, line, ws),
        "rules=" + _safe(proposed_session_rules, request),
        "broad=" + (_safe(broad_rule_ok, words[0]) if words else ""),
        "match=" + _safe(rules.rule_matches, line, rules.command_forms("rm -rf x; git push -f")),
        "denied=" + ",".join(_safe(rules.rule_matches, p, fx.runs) for p in _PATTERNS),
    ]
    return "\t".join(parts).replace(str(ws), "<WS>")


def main() -> int:
    lines = corpus()
    with tempfile.TemporaryDirectory() as tmp:
        ws = _workspace(Path(tmp))
        out = sys.stdout
        for line in lines:
            out.write(f"{line!r}\t{verdicts(line, ws)}\n")
    print(f"# {len(lines)} lines", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
