"""``python -m bench --only review``: auto mode's session runs, every approval goes to the
reviewer, its cost per approval and per session is reported next to the executor's, and its
chain keeps 100% of the pure-append cache ideal. Costs are printed, never asserted."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.bench import run_quick_bench

pytestmark = pytest.mark.slow


def test_review_bench_reports_the_reviewer_next_to_the_executor(tmp_path: Path) -> None:
    stdout, figures = run_quick_bench(tmp_path, "review")
    data = figures["review"]
    assert "error" not in data, data
    assert "review $/approval" in stdout and "exec $/step" in stdout
    session = data["sessions"]["10"]
    assert session["allowed"] == session["approvals"] == session["files_written"] == 10
    assert session["reviewer"]["requests"] == 10
    assert session["executor"]["requests"] == 21
    assert session["reviewer_usd_per_approval"] > 0 and session["executor"]["cost_usd"] > 0
    assert session["reviewer_hit_over_ideal"] == 1.0 and data["chain_target_met"]
