"""The seed's example program runs as written (offline: scripted fake DeepSeek servers)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent


def test_dual_model_example_runs_offline(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "DEEPSEEK_API_KEY"}
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "dual_model.py"), str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert "route: plan_and_execute; stop: done" in lines
    counts = next(line for line in lines if line.split() and line.split()[0].isdigit())
    executor_count, planner_count = (int(x) for x in counts.split())
    assert executor_count > 2
    assert planner_count > 2
    assert any(line.startswith("executor") for line in lines)
    assert any(line.startswith("planner") for line in lines)
    assert (tmp_path / "report.md").read_text().startswith("# Temperature report")
    assert (tmp_path / "chart.svg").exists()
