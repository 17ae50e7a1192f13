"""``python -m bench --only delegation``: the delegated survey and its inline twin run, and the
child chains keep 100% of the pure-append cache ideal. Figures are printed, never asserted
(costs depend on the scripted sizes, timings on the machine)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.bench import run_quick_bench

pytestmark = pytest.mark.slow


def test_delegation_bench_runs_and_child_chains_are_pure_append(tmp_path: Path) -> None:
    stdout, figures = run_quick_bench(tmp_path, "delegation")
    data = figures["delegation"]
    assert "error" not in data, data
    assert "Delegated survey" in stdout and "Cache efficiency of the child chains" in stdout
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
