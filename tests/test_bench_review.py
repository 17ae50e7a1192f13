"""``python -m bench --only review``: auto mode's session runs, every approval goes to the
reviewer, its cost per approval and per session is reported next to the executor's, and its
chain keeps 100% of the pure-append cache ideal. Costs are printed, never asserted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]


def test_review_bench_reports_the_reviewer_next_to_the_executor(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--only", "review", "--json", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    data = json.loads(out.read_text())["review"]
    assert "error" not in data, data
    assert "review $/approval" in proc.stdout and "exec $/step" in proc.stdout
    session = data["sessions"]["10"]
    assert session["allowed"] == session["approvals"] == session["files_written"] == 10
    assert session["reviewer"]["requests"] == 10
    assert session["executor"]["requests"] == 21
    assert session["reviewer_usd_per_approval"] > 0 and session["executor"]["cost_usd"] > 0
    assert session["reviewer_hit_over_ideal"] == 1.0 and data["chain_target_met"]
