"""``python -m bench [--quick] [--json PATH] [--only NAME]``: run the benchmarks, print a table
per section and write every figure to JSON (default ``bench/results/latest.json``)."""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
import traceback
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

Section = Callable[[bool], dict[str, Any]]


def sections() -> dict[str, Section]:
    # imported here so `--only` loads just what it runs
    from bench import (
        batch,
        cache,
        delegation,
        edits,
        install,
        long,
        memory,
        original,
        overhead,
        prefix,
        review,
        snapshots,
        startup,
        steps,
    )

    return {
        "cache": cache.run_cache,
        "cost": cache.run_cost,
        "overhead": overhead.run_overhead,
        "startup": startup.run_startup,
        "memory": memory.run_memory,
        "edits": edits.run_edits,
        "prefix": prefix.run_prefix,
        "batch": batch.run_batch,
        "snapshots": snapshots.run_snapshots,
        "delegation": delegation.run_delegation,
        "install": install.run_install,
        "steps": steps.run_steps,
        "original": original.run_original,
        "long": long.run_long,
        "dual": long.run_dual,
        "review": review.run_review,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a fast smoke run (fewer repeats)")
    parser.add_argument(
        "--json", default="bench/results/latest.json", metavar="PATH", help="where to write JSON"
    )
    parser.add_argument("--only", action="append", metavar="NAME", help="run only this section")
    args = parser.parse_args(argv)
    table = sections()
    chosen = args.only or list(table)
    unknown = [n for n in chosen if n not in table]
    if unknown:
        parser.error(f"unknown section(s) {', '.join(unknown)}; choose from {', '.join(table)}")
    from reasonix._version import __version__

    results: dict[str, Any] = {
        "meta": {
            "reasonix": __version__,
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": _cpus(),
            "quick": args.quick,
            "when": datetime.now(UTC).isoformat(timespec="seconds"),
        }
    }
    failed = []
    started = time.perf_counter()
    for name in chosen:
        t0 = time.perf_counter()
        try:
            results[name] = table[name](args.quick)
        except Exception as exc:  # one broken section must not hide the others' figures
            traceback.print_exc()
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
            failed.append(name)
        results[name]["seconds"] = round(time.perf_counter() - t0, 2)
    results["meta"]["seconds"] = round(time.perf_counter() - started, 2)
    path = Path(args.json)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n")
    print(f"\nwrote {path} in {results['meta']['seconds']} s")
    if failed:
        print(f"sections that failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def _cpus() -> int:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


if __name__ == "__main__":
    sys.exit(main())
