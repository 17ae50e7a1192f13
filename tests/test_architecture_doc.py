"""docs/architecture.md lists the session façade's whole public surface on one screen: the
members of ``AgentSession`` by group and the members of each named part. This holds the list to
the code: a public member added without its line in the page, or a line left for one that went,
fails here (each cell names members as comma-separated items, the first name in backticks of
an item being the member, the rest of the item, in parentheses, a comment)."""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"
#: a part's row: | `session.NAME` | `app/MODULE.py` `CLASS` | members |
PART_ROW = re.compile(r"^\s*\| `session\.(\w+)` \| `app/(\w+)\.py` `(\w+)` \| (.+) \|\s*$")
#: a façade group's row: | group | members |, between the "group | members" header and a blank
GROUP_HEADER = re.compile(r"^\s*\| group \| members \|\s*$")


def _members(cell: str) -> set[str]:
    """The member each top-level item of a cell names (parentheses are comments)."""
    items: list[str] = []
    depth, current = 0, ""
    for char in cell:
        depth += char == "("
        depth -= char == ")"
        if char == "," and depth == 0:
            items.append(current)
            current = ""
        else:
            current += char
    items.append(current)
    names = set()
    for item in items:
        found = re.search(r"`(\w+)`", item)
        assert found is not None, f"no member in {item!r} of {cell!r}"
        names.add(found.group(1))
    return names


def _documented() -> tuple[set[str], dict[str, tuple[str, str, set[str]]]]:
    lines = DOC.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if GROUP_HEADER.match(line))
    facade: set[str] = set()
    for line in lines[start + 2 :]:
        if not line.strip().startswith("|"):
            break
        facade |= _members(line.strip().strip("|").split("|", 1)[1])
    parts = {
        m.group(1): (m.group(2), m.group(3), _members(m.group(4)))
        for line in lines
        if (m := PART_ROW.match(line))
    }
    return facade, parts


def _public(cls: type) -> set[str]:
    """The class's public names: its methods, properties and class attributes, and every
    ``self.NAME = ...`` its methods assign."""
    names = {n for n in vars(cls) if not n.startswith("_")}
    tree = ast.parse(inspect.getsource(cls))
    for node in ast.walk(tree):
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign | ast.AugAssign):
            targets = [node.target]
        for target in targets:
            if (
                isinstance(target, ast.Attribute)
                and isinstance(target.value, ast.Name)
                and target.value.id == "self"
                and not target.attr.startswith("_")
            ):
                names.add(target.attr)
    return names


def test_the_facades_public_surface_is_the_documented_one() -> None:
    from reasonix.app.session import AgentSession

    facade, parts = _documented()
    assert parts, "no part rows found in docs/architecture.md"
    real = _public(AgentSession)
    assert sorted(real - facade) == [], "public on AgentSession, missing in the page"
    assert sorted(facade - real) == [], "in the page, not public on AgentSession"
    assert set(parts) <= real, "a part the façade does not have"


@pytest.mark.parametrize("part", sorted(_documented()[1]))
def test_each_parts_public_surface_is_the_documented_one(part: str) -> None:
    module, class_name, documented = _documented()[1][part]
    cls = getattr(importlib.import_module(f"reasonix.app.{module}"), class_name)
    real = _public(cls)
    assert sorted(real - documented) == [], f"public on {class_name}, missing in the page"
    assert sorted(documented - real) == [], f"in the page, not public on {class_name}"


def test_every_part_of_the_facade_is_documented() -> None:
    """Each attribute of the façade that holds a part (an object built from the session) has
    its row, so a new part cannot hide its members from the page."""
    source = inspect.getsource(importlib.import_module("reasonix.app.session"))
    built = set(re.findall(r"self\.(\w+) = (Session\w+)\(self\)", source))
    _, parts = _documented()
    assert {(name, parts[name][1]) for name, _ in built if name in parts} == built
