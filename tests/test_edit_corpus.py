"""Edits on real standard-library modules, with the whitespace drifts models make.

The corpus comes from :mod:`reasonix.tools.builtin.edit_corpus` (importable, so ``bench/`` can
reuse it). Every case runs through the real ``edit_file`` tool via ``ToolRegistry.execute``.
Drifted edits whose text happens to match another place exactly are left out by the generator:
from the tool's side those are valid exact edits, not drifts.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from reasonix.safety.sandbox import Sandbox
from reasonix.tools.builtin.edit_corpus import build_edit_corpus, judge
from reasonix.tools.builtin.files import file_tools
from reasonix.tools.registry import ToolContext, ToolRegistry


@pytest.mark.slow
async def test_edit_corpus(tmp_path: Path) -> None:
    cases = build_edit_corpus(tmp_path, seed=1234, cases_per_file=10)
    registry = ToolRegistry(file_tools(Sandbox([tmp_path])))
    ctx = ToolContext(workspace=tmp_path)
    by_kind: dict[str, Counter[str]] = defaultdict(Counter)
    problems: list[str] = []
    for case in cases:
        target = tmp_path / case.file
        target.write_bytes(case.original)
        args = {"path": case.file, "old_string": case.old_string, "new_string": case.new_string}
        result = await registry.execute("edit_file", json.dumps(args), ctx)
        verdict = judge(case, target.read_bytes(), result.is_error)
        by_kind[case.perturbation][verdict] += 1
        if verdict == "wrong":
            problems.append(f"{case.name}: applied to the wrong place or wrongly")
        elif case.ambiguous and verdict != "refused":
            problems.append(f"{case.name}: ambiguous edit was applied")
        elif case.perturbation == "none" and not case.ambiguous and verdict != "exact":
            problems.append(f"{case.name}: unperturbed edit did not apply exactly: {verdict}")
        if result.is_error:
            assert result.content.strip() and "Traceback" not in result.content

    drifted = [c for c in cases if c.perturbation != "none" and not c.ambiguous]
    applied = sum(by_kind[k]["exact"] + by_kind[k]["right_place"] for k in by_kind if k != "none")
    # Every one of these was refused (checked above).
    ambiguous_drifted = sum(1 for c in cases if c.perturbation != "none" and c.ambiguous)
    rate = applied / len(drifted)
    print(f"\nedit corpus: {len(cases)} cases over {len({c.file for c in cases})} files")
    for kind in sorted(by_kind):
        print(f"  {kind:22} {dict(by_kind[kind])}")
    print(
        f"  drifted, unambiguous: {applied}/{len(drifted)} applied ({rate:.1%}); "
        f"drifted but ambiguous (refused): {ambiguous_drifted}"
    )
    assert not problems, "\n".join(problems[:20])
    assert len(cases) >= 500
    assert sum(by_kind["none"].values()) >= 100
    assert {"dedent", "indent", "tabs_for_spaces", "spaces_for_tabs", "crlf_sent"} <= set(by_kind)
    assert {"trailing_ws_added", "trailing_ws_stripped", "final_newline"} <= set(by_kind)
    assert rate > 0.9
