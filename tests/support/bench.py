"""Running ``python -m bench --quick`` from a test: its printed report and its JSON figures."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def run_quick_bench(out_dir: Path, *only: str, timeout: float = 300) -> tuple[str, dict[str, Any]]:
    """``python -m bench --quick [--only SECTION ...]`` in the repository: its stdout and the
    JSON it wrote. Fails the test (with the end of both streams) when the bench fails."""
    out = out_dir / "bench.json"
    selection = [arg for name in only for arg in ("--only", name)]
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", *selection, "--json", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    data: dict[str, Any] = json.loads(out.read_text())
    return proc.stdout, data
