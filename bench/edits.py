"""Edit robustness: ``edit_file`` on the seeded edit corpus of the tools layer
(:mod:`reasonix.tools.builtin.edit_corpus`: standard-library modules in several file styles,
edits in the drifted forms models produce). Apply rate counts exact and right-place results
over the cases that have one right place; wrong-place counts any file changed wrongly."""

from __future__ import annotations

import asyncio
import json
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from bench.common import print_table
from reasonix.safety.sandbox import Sandbox
from reasonix.tools.builtin.edit_corpus import (
    STDLIB_MODULES,
    EditCase,
    Verdict,
    build_edit_corpus,
    judge,
)
from reasonix.tools.builtin.files import FileTools
from reasonix.tools.registry import ToolContext, ToolRegistry


async def _run_cases(dest: Path, cases: list[EditCase]) -> list[tuple[EditCase, Verdict]]:
    registry = ToolRegistry(FileTools(Sandbox([dest])).tools())
    ctx = ToolContext(workspace=dest)
    verdicts: list[tuple[EditCase, Verdict]] = []
    for case in cases:
        target = dest / case.file
        target.write_bytes(case.original)
        args = {"path": case.file, "old_string": case.old_string, "new_string": case.new_string}
        result = await registry.execute("edit_file", json.dumps(args), ctx)
        verdicts.append((case, judge(case, target.read_bytes(), result.is_error)))
    return verdicts


def run_edits(quick: bool) -> dict[str, Any]:
    modules = STDLIB_MODULES[:3] if quick else STDLIB_MODULES
    with tempfile.TemporaryDirectory(prefix="reasonix-edits-") as tmp:
        dest = Path(tmp)
        cases = build_edit_corpus(dest, seed=0, cases_per_file=3 if quick else 10, modules=modules)
        verdicts = asyncio.run(_run_cases(dest, cases))
    single = [(c, v) for c, v in verdicts if not c.ambiguous]
    ambiguous = [(c, v) for c, v in verdicts if c.ambiguous]
    counts = Counter(v for _, v in single)
    applied = counts["exact"] + counts["right_place"]
    wrong = sum(1 for _, v in verdicts if v == "wrong")
    amb_refused = sum(1 for _, v in ambiguous if v == "refused")
    by_kind: dict[str, Counter[str]] = {}
    for c, v in single:
        by_kind.setdefault(c.perturbation, Counter())[v] += 1
    rows = [
        [
            kind,
            sum(k.values()),
            k["exact"],
            k["right_place"],
            k["refused"],
            k["wrong"],
            f"{(k['exact'] + k['right_place']) / sum(k.values()):.1%}",
        ]
        for kind, k in sorted(by_kind.items())
    ]
    rows.append(
        [
            "all (one right place)",
            len(single),
            counts["exact"],
            counts["right_place"],
            counts["refused"],
            counts["wrong"],
            f"{applied / len(single):.1%}",
        ]
    )
    print_table(
        f"Edit robustness: {len(verdicts)} cases ({len(ambiguous)} ambiguous, where refusing is "
        f"right: {amb_refused} refused); wrong place overall: {wrong} "
        f"({wrong / len(verdicts):.2%})",
        rows,
        ["drift", "cases", "exact", "right place", "refused", "wrong", "applied"],
    )
    return {
        "cases": len(verdicts),
        "single_place_cases": len(single),
        "ambiguous_cases": len(ambiguous),
        "apply_rate": round(applied / len(single), 4) if single else None,
        "exact_rate": round(counts["exact"] / len(single), 4) if single else None,
        "refused": counts["refused"],
        "wrong_place": wrong,
        "wrong_place_rate": round(wrong / len(verdicts), 4) if verdicts else None,
        "ambiguous_refused": amb_refused,
        "by_drift": {k: dict(v) for k, v in sorted(by_kind.items())},
    }
