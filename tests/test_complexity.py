"""No function in ``safety/`` is over cyclomatic complexity 25 (radon's count, which adds each
boolean operator and comprehension clause, so it is stricter than ruff's C901).

The permission and containment code is where a missed branch is a hole: a function too
branched to read whole is a function nobody can check. Split it into named steps or a table.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from radon.complexity import cc_visit

MAX = 25
SAFETY = Path(__file__).resolve().parents[1] / "src" / "reasonix" / "safety"


def _over(root: Path, limit: int) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        for block in cc_visit(path.read_text(encoding="utf-8")):
            if block.complexity > limit:
                where = path.relative_to(root.parents[1])
                found.append(f"{where}:{block.lineno} {block.fullname} = {block.complexity}")
    return found


def test_no_function_in_safety_is_over_the_limit() -> None:
    assert _over(SAFETY, MAX) == []


@pytest.mark.parametrize(("limit", "expect"), [(1, True), (10_000, False)])
def test_the_measure_sees_branches(tmp_path: Path, limit: int, expect: bool) -> None:
    # control: the same scan finds a branched function when the limit is below it
    pkg = tmp_path / "src" / "pkg"
    pkg.mkdir(parents=True)
    body = "".join(f"    if x == {i}:\n        return {i}\n" for i in range(30))
    (pkg / "m.py").write_text(f"def f(x):\n{body}    return -1\n", encoding="utf-8")
    assert bool(_over(pkg, limit)) is expect
