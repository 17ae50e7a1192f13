"""Install footprint: a fresh clone of the checkout's ``HEAD`` installed cold (``pip install .``,
the wheel built from the clone as a user's would be) into a fresh virtual environment with pip's
cache disabled, timed, then the packages it installed counted and any warning pip printed
shown. Reads the package index pip is configured with (slow: minutes)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path
from typing import Any

from bench.common import print_table

ROOT = Path(__file__).resolve().parent.parent
#: pip's own notes about the index configuration of a machine, not about reasonix
_NOT_OURS = re.compile(r"Location '.*' is ignored")


def cold_install(source: Path = ROOT) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="reasonix-bench-install-") as tmp:
        clone = Path(tmp) / "reasonix"
        subprocess.run(
            ["git", "clone", "--quiet", "--depth", "1", f"file://{source}", str(clone)],
            check=True,
            capture_output=True,
        )
        env_dir = Path(tmp) / "venv"
        venv.EnvBuilder(with_pip=True).create(env_dir)
        python = str(env_dir / "bin" / "python")
        base = _packages(python)
        t0 = time.perf_counter()
        proc = subprocess.run(
            [python, "-m", "pip", "install", "--no-cache-dir", str(clone)],
            capture_output=True,
            text=True,
            check=False,
        )
        seconds = time.perf_counter() - t0
        if proc.returncode != 0:
            return {"available": False, "why": proc.stderr[-500:]}
        installed = sorted(set(_packages(python)) - set(base))
        site = next((env_dir / "lib").glob("python*/site-packages"))
        size_mb = sum(f.stat().st_size for f in site.rglob("*") if f.is_file()) / 1e6
        warnings = [
            line.strip()
            for line in (proc.stdout + proc.stderr).splitlines()
            if line.lstrip().startswith("WARNING") and not _NOT_OURS.search(line)
        ]
    return {
        "available": True,
        "install_seconds": round(seconds, 1),
        "packages": len(installed),
        "site_packages_mb": round(size_mb, 1),
        "installed": installed,
        "warnings": warnings,
    }


def _packages(python: str) -> list[str]:
    out = subprocess.run(
        [python, "-m", "pip", "list", "--format", "json"],
        capture_output=True,
        text=True,
        check=True,
    )
    return [p["name"].lower() for p in json.loads(out.stdout)]


def run_install(quick: bool) -> dict[str, Any]:
    if quick:  # minutes, and the package index: a full run (or `--only install`) measures it
        print("\n== Install: skipped with --quick (run `python -m bench --only install`)")
        return {"skipped": "--quick"}
    out = cold_install()
    if not out["available"]:
        print_table("Install (cold, no pip cache)", [["failed", out["why"][:80]]], ["", ""])
        return out
    print_table(
        "Install: cold `pip install .` of a fresh clone into a new venv, pip cache off",
        [
            [
                f"{out['install_seconds']} s",
                out["packages"],
                f"{out['site_packages_mb']} MB",
                len(out["warnings"]) or "none",
            ]
        ],
        ["time", "packages (reasonix included)", "site-packages", "pip warnings"],
    )
    for line in out["warnings"]:
        print(f"  {line}")
    return out


if __name__ == "__main__":  # `python -m bench.install [SOURCE]`: another checkout's figures
    result = cold_install(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT)
    print(json.dumps({k: v for k, v in result.items() if k != "installed"}, indent=2))
