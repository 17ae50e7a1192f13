"""Small helpers shared by the benchmark sections: summary statistics and table output."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Stat:
    """A timing figure: the median of repeated runs with its spread."""

    median: float
    low: float
    high: float
    runs: int

    @classmethod
    def of(cls, samples: Sequence[float]) -> Stat:
        if not samples:
            return cls(float("nan"), float("nan"), float("nan"), 0)
        return cls(statistics.median(samples), min(samples), max(samples), len(samples))

    def to_dict(self, digits: int = 3) -> dict[str, Any]:
        return {
            "median": round(self.median, digits),
            "min": round(self.low, digits),
            "max": round(self.high, digits),
            "runs": self.runs,
        }

    def fmt(self, unit: str = "ms", digits: int = 2) -> str:
        return f"{self.median:.{digits}f} {unit} ({self.low:.{digits}f}–{self.high:.{digits}f})"


def repeat(func: Callable[[], float], runs: int, warmup: int = 1) -> Stat:
    """Call ``func`` (which returns one measurement) ``warmup + runs`` times."""
    for _ in range(warmup):
        func()
    return Stat.of([func() for _ in range(runs)])


def wall_ms(func: Callable[[], object]) -> float:
    start = time.perf_counter()
    func()
    return (time.perf_counter() - start) * 1000


def verdict(ok: bool | None) -> str:
    if ok is None:
        return "n/a"
    return "met" if ok else "MISSED"


def print_table(title: str, rows: Sequence[Sequence[object]], header: Sequence[str]) -> None:
    """A plain aligned table (no colour: the output goes into READMEs and CI logs)."""
    cells = [[str(c) for c in header], *[[str(c) for c in r] for r in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    print(f"\n== {title}")
    for n, row in enumerate(cells):
        print("  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
        if n == 0:
            print("  " + "  ".join("-" * w for w in widths))
