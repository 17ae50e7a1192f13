"""``python -m bench --only delegation``: the delegated survey and its inline twin run, and the
child chains keep 100% of the pure-append cache ideal. Figures are printed, never asserted
(costs depend on the scripted sizes, timings on the machine)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]


def test_delegation_bench_runs_and_child_chains_are_pure_append(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--only", "delegation", "--json", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    data = json.loads(out.read_text())["delegation"]
    assert "error" not in data, data
    assert (
        "Delegated survey" in proc.stdout and "Cache efficiency of the child chains" in proc.stdout
    )
    chains = data["child_chains"]
    assert set(chains) == {"parser", "render", "store"}
    for chain in chains.values():
        assert chain["requests"] == 3
        assert chain["ideal_hit_tokens"] > 0
        assert chain["hit_over_ideal"] == 1.0
    assert data["chains_target_met"] is True
    for run in data["by_follow_ups"].values():
        assert run["delegated"]["children"]["prompt_tokens"] > 0
        assert run["delegated"]["children"]["cost_usd"] > 0
        assert run["inline"]["cost_usd"] > 0
