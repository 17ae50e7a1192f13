"""``python -m bench --quick`` runs every section and writes its JSON. Figures are printed,
never asserted: timings depend on the machine.

One test per section (each its own ``--only`` run), so the test processes share the sections
out instead of one test running them all in a row; what each section's figures must show about
the behaviour it measured is checked beside it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.bench import run_quick_bench

pytestmark = pytest.mark.slow


def _cache(cache: dict[str, Any]) -> None:
    # behaviour, not timing: the scripted session had the shape the cache figure claims
    assert cache["executor_steps"] >= 40
    assert cache["planning_rounds"] >= 3
    assert cache["replans"] >= 1
    assert cache["compactions"] == 1
    assert cache["problems"] == []
    assert set(cache["roles"]) == {"executor", "planner"}


def _prefix(prefix: dict[str, Any]) -> None:
    assert prefix["executor"]["tokens"] > 0
    # the prefix is the one the CLI sends: the executor has the discovery tool
    assert "more_tools" in prefix["executor"]["per_tool"]


def _long(long: dict[str, Any]) -> None:
    # the long session ran as scripted, through the CLI assembly
    assert long["problems"] == []
    assert {r["policy"] for r in long["runs"]} == {"window", "economic"}
    assert all(r["executor_requests"] >= r["steps"] for r in long["runs"])


def _dual(dual: dict[str, Any]) -> None:
    assert dual["problems"] == []
    assert dual["executor_requests"] == 6 and dual["cache"]["planner"]


def _snapshots(snapshots: dict[str, Any]) -> None:
    # every file deleted came back from the snapshots
    smallest = snapshots["10000"]  # the bench's smallest folder, the one it rewinds
    assert smallest["files_restored"] == smallest["files"] >= 10_000


def _edits(edits: dict[str, Any]) -> None:
    assert edits["cases"] > 0


def _ran(_: dict[str, Any]) -> None:
    """The section ran and wrote its figures (checked for every section below)."""


SECTIONS: dict[str, Callable[[dict[str, Any]], None]] = {
    "cache": _cache,
    "cost": _ran,
    "overhead": _ran,
    "startup": _ran,
    "memory": _ran,
    "edits": _edits,
    "prefix": _prefix,
    "snapshots": _snapshots,
    "long": _long,
    "dual": _dual,
    "batch": _ran,
    "steps": _ran,
}  # review and delegation have their own tests (test_bench_review.py, test_bench_delegation.py)


@pytest.mark.parametrize("name", SECTIONS)
def test_quick_bench_section(tmp_path: Path, name: str) -> None:
    # a loaded 2-core machine: generous, never a timing assertion; under the 600 s per-test
    # limit so a hang still names this run
    _, data = run_quick_bench(tmp_path, name, timeout=540)
    assert data["meta"]["quick"] is True
    assert name in data, sorted(data)
    assert "error" not in data[name], data[name]
    SECTIONS[name](data[name])
