"""What a shell command does is written once: no module of src/ keeps its own list of git's
options, of the wrappers that run another command, or a regular expression for redirections
(the lexer reads those). The modules are read as Python (their literals), not run."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src" / "reasonix"


def _literals(tree: ast.AST) -> Iterator[tuple[int, set[str]]]:
    """Every set, tuple or list literal of strings and every dict's string keys, with its
    line."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Set | ast.Tuple | ast.List):
            elements = list(node.elts)
        elif isinstance(node, ast.Dict):
            elements = [k for k in node.keys if k is not None]
        else:
            continue
        words = {e.value for e in elements if isinstance(e, ast.Constant)}
        if words and all(isinstance(w, str) for w in words):
            yield node.lineno, {str(w) for w in words}


def _modules() -> Iterator[tuple[str, ast.Module, str]]:
    for path in sorted(SRC.rglob("*.py")):
        text = path.read_text()
        yield path.relative_to(SRC).as_posix(), ast.parse(text), text


def _where(test: object) -> list[str]:
    found = []
    for name, tree, _ in _modules():
        for line, words in _literals(tree):
            if callable(test) and test(words):
                found.append(f"{name}:{line}")
    return found


def test_one_list_of_gits_own_options() -> None:
    # an option list holds options only (an argv that passes them, ["git", "-c", ...], is not)
    places = _where(
        lambda w: (
            all(x.startswith("-") for x in w)
            and ({"-C", "--git-dir"} <= w or {"-c", "--work-tree"} <= w)
        )
    )
    assert places == [p for p in places if p.startswith("safety/shell/git.py")], places
    assert places, "the list itself is found (the probe sees it)"


def test_one_list_of_wrappers() -> None:
    places = _where(lambda w: len({"sudo", "nohup", "xargs", "env", "timeout"} & w) >= 3)
    assert places == [p for p in places if p.startswith("safety/shell/rules.py")], places
    assert places, "the list itself is found (the probe sees it)"


def test_no_regular_expression_reads_redirections() -> None:
    redirect = re.compile(r"re\.compile\([^\n]*(?:\\d\*>|&>|>>\?)")
    found = [name for name, _, text in _modules() if redirect.search(text)]
    assert found == [], found
    probe = 'x = re.compile(r"(?:^|\\s)(?:\\d*>>?|&>>?)\\s*(\\S+)")'
    assert redirect.search(probe), "the probe sees the old form"
