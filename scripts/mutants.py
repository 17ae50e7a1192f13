"""Naive mutation sampling: do the fast tests of a module notice a wrong line?

For each module named, the script lists the naive mutants of its code (a comparison flipped,
``and``/``or`` swapped, a ``not`` dropped, ``True``/``False`` swapped, an integer shifted by
one), takes a seeded sample of ``--per-module`` of them, and runs each against that module's
fast tests (``-m "not slow"``) in a scratch copy of ``src/`` put first on ``PYTHONPATH`` (the
checkout is never touched), one mutant at a time, with a per-test time limit so a mutant that
loops fails instead of hanging. A mutant is *killed* when the tests fail. Docstrings, type
annotations, ``__all__`` and logging/message strings are never mutated.

    .venv/bin/python scripts/mutants.py retry           # one module, its default tests
    .venv/bin/python scripts/mutants.py --list retry    # the sampled mutants, not run

The table of modules (and the tests that are "theirs") is ``MODULES`` below. Survivors are
printed with their line; decide by reading each whether it is equivalent (no behaviour
changes) or a gap in the tests. Results go to ``build/mutants/<module>.json``.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: the shell package's table tests (a row per program and form, milliseconds each)
_SHELL_TABLES = (
    "tests/test_shell_program_rows.py",
    "tests/test_shell_effects.py",
    "tests/test_shell_read_only.py",
    "tests/test_shell_git.py",
    "tests/test_shell_lexer.py",
    "tests/test_irreversible.py",
    "tests/test_shell_survivor_rows.py",
)

#: module key -> (source file, its fast tests)
MODULES: dict[str, tuple[str, tuple[str, ...]]] = {
    "confinement": (
        "src/reasonix/safety/confinement.py",
        ("tests/test_sandbox_config.py", "tests/test_confinement_table.py"),
    ),
    "checkpoints": (
        "src/reasonix/safety/checkpoints.py",
        ("tests/test_checkpoints.py", "tests/test_checkpoints_table.py"),
    ),
    "retry": (
        "src/reasonix/providers/retry.py",
        ("tests/test_provider_retry.py", "tests/test_provider.py", "tests/test_retry_table.py"),
    ),
    "gate": ("src/reasonix/control/gate.py", ("tests/test_gate_table.py",)),
    # evidence: what the host accepts as proof that a step or a goal is done
    "ledger": ("src/reasonix/agent/progress.py", ("tests/test_evidence_table.py",)),
    "steps": ("src/reasonix/control/todo_tools.py", ("tests/test_evidence_table.py",)),
    "goal": ("src/reasonix/control/goal.py", ("tests/test_evidence_table.py",)),
    "shell_programs": ("src/reasonix/safety/shell/programs.py", _SHELL_TABLES),
    "shell_readers": ("src/reasonix/safety/shell/readers.py", _SHELL_TABLES),
    "shell_rules": ("src/reasonix/safety/shell/rules.py", _SHELL_TABLES),
    "shell_effects": ("src/reasonix/safety/shell/effects.py", _SHELL_TABLES),
    "shell_git": ("src/reasonix/safety/shell/git.py", ("tests/test_shell_git.py",)),
    "shell_irreversible": ("src/reasonix/safety/shell/irreversible.py", _SHELL_TABLES),
    "shell_deletes": ("src/reasonix/safety/shell/deletes.py", _SHELL_TABLES),
    "shell_lexer": ("src/reasonix/safety/shell/lexer.py", _SHELL_TABLES),
    # the rules "allow for this session" proposes (only those functions: see SCOPES)
    "approval_rules": (
        "src/reasonix/app/approvals.py",
        ("tests/test_approval_proposals.py", *_SHELL_TABLES),
    ),
    "session": (
        "src/reasonix/app/session.py",
        (
            "tests/test_app_session.py",
            "tests/test_app_commands.py",
            "tests/test_app_persistence.py",
            "tests/test_extensions_hooks.py",
            "tests/test_app_session_choices.py",
            "tests/test_app_session_wiring.py",
        ),
    ),
}

#: module key -> the functions whose code is sampled (the rest of the module is left alone)
SCOPES: dict[str, tuple[str, ...]] = {
    "approval_rules": (
        "proposed_session_rules",
        "_meaningful",
        "_bare_interpreter",
        "_runs_code",
        "_command_rules",
    ),
}

_FLIP: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.GtE,
    ast.GtE: ast.Lt,
    ast.Gt: ast.LtE,
    ast.LtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}


@dataclass
class Mutant:
    index: int  # position in the module's full list (stable for a given source)
    line: int
    kind: str
    before: str
    after: str
    outcome: str = ""  # killed | survived | timeout | error
    seconds: float = 0.0


def _skipped_nodes(tree: ast.Module) -> set[int]:
    """Nodes never mutated: docstrings, annotations, ``__all__``, ``TYPE_CHECKING`` blocks."""
    skip: set[int] = set()

    def mark(node: ast.AST | None) -> None:
        if node is not None:
            skip.update(id(n) for n in ast.walk(node))

    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign | ast.arg):
            mark(node.annotation)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            mark(node.returns)
        elif (isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)) or (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
        ):
            mark(node)
    return skip


def candidates(source: str, scope: tuple[str, ...] = ()) -> list[tuple[ast.AST, str, str]]:
    """(node, kind, description) for every naive mutation point, in source order (only inside
    the functions named in ``scope`` when it is given)."""
    return candidates_in(ast.parse(source), scope)


def _in_scope(tree: ast.Module, scope: tuple[str, ...]) -> set[int] | None:
    if not scope:
        return None
    inside: set[int] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in scope:
            inside.update(id(n) for n in ast.walk(node))
    return inside


def candidates_in(tree: ast.Module, scope: tuple[str, ...] = ()) -> list[tuple[ast.AST, str, str]]:
    skip = _skipped_nodes(tree)
    inside = _in_scope(tree, scope)
    found: list[tuple[ast.AST, str, str]] = []
    for node in ast.walk(tree):
        if id(node) in skip or (inside is not None and id(node) not in inside):
            continue
        if isinstance(node, ast.Compare):
            for i, op in enumerate(node.ops):
                if type(op) in _FLIP:
                    found.append((node, f"cmp:{i}", type(op).__name__))
        elif isinstance(node, ast.BoolOp):
            found.append((node, "boolop", type(node.op).__name__))
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            found.append((node, "not", "not"))
        elif isinstance(node, ast.Constant) and isinstance(node.value, bool):
            found.append((node, "bool", repr(node.value)))
        elif isinstance(node, ast.Constant) and type(node.value) is int:
            found.append((node, "int", repr(node.value)))
    found.sort(key=lambda c: (getattr(c[0], "lineno", 0), getattr(c[0], "col_offset", 0)))
    return found


class _Apply(ast.NodeTransformer):
    def __init__(self, target: ast.AST, kind: str) -> None:
        self.target, self.kind = target, kind

    def visit(self, node: ast.AST) -> ast.AST:
        if node is not self.target:
            return super().visit(node)
        if self.kind.startswith("cmp:"):
            assert isinstance(node, ast.Compare)
            i = int(self.kind[4:])
            node.ops[i] = _FLIP[type(node.ops[i])]()
            return node
        if self.kind == "boolop":
            assert isinstance(node, ast.BoolOp)
            node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
            return node
        if self.kind == "not":
            assert isinstance(node, ast.UnaryOp)
            return node.operand
        if self.kind == "bool":
            assert isinstance(node, ast.Constant)
            return ast.copy_location(ast.Constant(not node.value), node)
        if self.kind == "int":
            assert isinstance(node, ast.Constant)
            return ast.copy_location(ast.Constant(node.value + 1), node)
        raise ValueError(self.kind)


def mutate(source: str, index: int, scope: tuple[str, ...] = ()) -> tuple[str, Mutant]:
    """The source with mutation ``index`` applied (as ``ast.unparse`` writes it)."""
    tree = ast.parse(source)
    node, kind, what = candidates_in(tree, scope)[index]
    line = getattr(node, "lineno", 0)
    before = _find_line(tree, line)
    mutated = _Apply(node, kind).visit(tree)
    ast.fix_missing_locations(mutated)
    after = _find_line(mutated, line) or what
    return ast.unparse(mutated), Mutant(index, line, kind.split(":")[0], before, after)


def _find_line(tree: ast.AST, line: int) -> str:
    """A short rendering of the smallest statement on ``line`` after mutation."""
    best: ast.stmt | None = None
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt) or node.end_lineno is None:
            continue
        if node.lineno <= line <= node.end_lineno and (
            best is None or node.end_lineno - node.lineno <= (best.end_lineno or 0) - best.lineno
        ):
            best = node
    if best is None:
        return ""
    text = ast.unparse(best).splitlines()[0]
    return text[:160]


def sample(total: int, n: int, seed: int) -> list[int]:
    """``n`` indices spread over the module: one random pick in each of ``n`` equal strata."""
    if total <= n:
        return list(range(total))
    rng = random.Random(seed)
    edges = [round(i * total / n) for i in range(n + 1)]
    return [rng.randrange(edges[i], edges[i + 1]) for i in range(n)]


def run_tests(scratch: Path, tests: tuple[str, ...], timeout: float) -> tuple[str, float]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(scratch) + os.pathsep + env.get("PYTHONPATH", "")
    env["REASONIX_TEST_TIMEOUT"] = str(timeout)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    present = [t for t in tests if (ROOT / t).exists()]
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-x",
        "-p",
        "no:cacheprovider",
        "-m",
        "not slow",
        "--no-header",
        *present,
    ]
    started = time.monotonic()
    try:
        proc = subprocess.run(
            cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout * 10
        )
    except subprocess.TimeoutExpired:
        return "timeout", time.monotonic() - started
    took = time.monotonic() - started
    if proc.returncode == 0:
        return "survived", took
    if proc.returncode in (1, 2, 3):  # tests failed, collection/import broke, internal error
        return "killed", took
    return f"error({proc.returncode})", took


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="*", default=list(MODULES), choices=list(MODULES))
    parser.add_argument("--per-module", type=int, default=25)
    parser.add_argument("--seed", type=int, default=34)
    parser.add_argument("--timeout", type=float, default=60.0, help="per-test limit, seconds")
    parser.add_argument("--list", action="store_true", help="print the sample, run nothing")
    parser.add_argument("--only", type=int, nargs="*", help="run these mutant indices only")
    parser.add_argument("--tests", nargs="*", help="run these test files instead of the table's")
    args = parser.parse_args(argv)

    out_dir = ROOT / "build" / "mutants"
    out_dir.mkdir(parents=True, exist_ok=True)
    for key in args.modules:
        rel, tests = MODULES[key]
        if args.tests:
            tests = tuple(args.tests)
        source = (ROOT / rel).read_text(encoding="utf-8")
        scope = SCOPES.get(key, ())
        total = len(candidates(source, scope))
        picks = args.only if args.only else sample(total, args.per_module, args.seed)
        print(f"{key}: {total} mutation points, {len(picks)} sampled; tests: {' '.join(tests)}")
        results: list[Mutant] = []
        with tempfile.TemporaryDirectory(prefix=f"mutants-{key}-") as tmp:
            scratch = Path(tmp) / "src"
            shutil.copytree(ROOT / "src", scratch, ignore=shutil.ignore_patterns("__pycache__"))
            target = scratch / Path(rel).relative_to("src")
            baseline, _ = run_tests(scratch, tests, args.timeout) if not args.list else ("", 0)
            if not args.list and baseline != "survived":
                print(f"  the unmutated tests do not pass ({baseline}): fix that first")
                return 2
            for index in picks:
                text, mutant = mutate(source, index, scope)
                if args.list:
                    print(f"  #{index} line {mutant.line} {mutant.kind}: {mutant.after}")
                    continue
                target.write_text(text, encoding="utf-8")
                mutant.outcome, mutant.seconds = run_tests(scratch, tests, args.timeout)
                target.write_text(source, encoding="utf-8")
                results.append(mutant)
                mark = "killed  " if mutant.outcome != "survived" else "SURVIVED"
                print(f"  {mark} #{index} line {mutant.line} {mutant.kind}: {mutant.after}")
        if args.list:
            continue
        killed = sum(1 for m in results if m.outcome != "survived")
        print(f"{key}: {killed}/{len(results)} killed")
        (out_dir / f"{key}.json").write_text(
            json.dumps([asdict(m) for m in results], indent=1), encoding="utf-8"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
