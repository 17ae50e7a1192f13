"""``OUT/results.jsonl``, the summary, and the exports.

Each finished task appends one line and the file is fsynced before the next task's row is
written, so a batch killed at any moment keeps every row it reported. A line cut by the kill
(no newline at the end) is ignored on reading and its task runs again.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["BatchSummary", "ResultsFile", "summarise", "write_predictions"]


class ResultsFile:
    """Append-only ``results.jsonl`` under the batch's output folder."""

    def __init__(self, out: Path) -> None:
        self.path = out / "results.jsonl"

    def rows(self) -> list[dict[str, Any]]:
        """The complete rows written so far (a torn last line is dropped)."""
        if not self.path.exists():
            return []
        data = self.path.read_bytes()
        if data and not data.endswith(b"\n"):
            data = data[: data.rfind(b"\n") + 1]
            with self.path.open("r+b") as f:
                f.truncate(len(data))
        rows = []
        for line in data.decode("utf-8", "replace").splitlines():
            try:
                row = json.loads(line)
            except ValueError:
                continue
            if isinstance(row, dict) and "id" in row:
                rows.append(row)
        return rows

    def finished_ids(self) -> set[str]:
        return {str(row["id"]) for row in self.rows()}

    def append(self, row: Mapping[str, Any]) -> None:
        line = json.dumps(row, ensure_ascii=False, sort_keys=False) + "\n"
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line.encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)


@dataclass
class BatchSummary:
    """What a batch did: counts, cost per role and per solved task, cache hit rate per role."""

    tasks: int = 0
    solved: int = 0
    verified: int = 0
    errors: int = 0
    cost: dict[str, float] = field(default_factory=dict)
    hits: dict[str, int] = field(default_factory=dict)
    prompts: dict[str, int] = field(default_factory=dict)

    @property
    def total_cost(self) -> float:
        return sum(self.cost.values())

    def hit_rate(self, role: str) -> float:
        prompt = self.prompts.get(role, 0)
        return self.hits.get(role, 0) / prompt if prompt else 0.0

    def lines(self, currency: str = "$") -> list[str]:
        out = [
            f"tasks: {self.tasks}   solved by verify: {self.solved}/{self.verified}   "
            f"errors: {self.errors}   cost: {currency}{self.total_cost:.6f}"
        ]
        for role in sorted(self.cost):
            per_solved = (
                f"{currency}{self.cost[role] / self.solved:.6f} per solved task"
                if self.solved
                else "no task solved"
            )
            out.append(
                f"  {role:<10} {currency}{self.cost[role]:.6f}   {per_solved}   "
                f"cache hits {self.hit_rate(role):.1%}"
            )
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "tasks": self.tasks,
            "solved": self.solved,
            "verified": self.verified,
            "errors": self.errors,
            "cost_usd": {
                **{k: round(v, 8) for k, v in self.cost.items()},
                "total": round(self.total_cost, 8),
            },
            "cost_per_solved_usd": {k: round(v / self.solved, 8) for k, v in self.cost.items()}
            if self.solved
            else {},
            "cache_hit_ratio": {role: round(self.hit_rate(role), 4) for role in self.prompts},
        }


def concurrency_line(rows: Iterable[Mapping[str, Any]], wall_s: float, asked: int) -> str:
    """How parallel the run really was: the tasks' own run time over the wall time (8.0 with
    ``asked`` = 8 is linear), and tasks per minute."""
    ran = [r for r in rows if r.get("duration_ms")]
    busy = sum(float(r["duration_ms"]) for r in ran) / 1000
    effective = busy / wall_s if wall_s > 0 else 0.0
    per_min = len(ran) / wall_s * 60 if wall_s > 0 else 0.0
    return (
        f"ran {len(ran)} task(s) in {wall_s:.1f} s: effective concurrency {effective:.1f} of "
        f"{asked} asked ({effective / asked:.0%} of linear), {per_min:.1f} tasks/min"
    )


def summarise(rows: Iterable[Mapping[str, Any]]) -> BatchSummary:
    summary = BatchSummary()
    for row in rows:
        summary.tasks += 1
        if row.get("error_class"):
            summary.errors += 1
        if row.get("verify_exit_code") is not None:
            summary.verified += 1
            if row.get("solved"):
                summary.solved += 1
        for role, usage in (row.get("usage") or {}).items():
            summary.cost[role] = summary.cost.get(role, 0.0) + float(usage.get("cost_usd", 0.0))
            summary.hits[role] = summary.hits.get(role, 0) + int(usage.get("cache_hit_tokens", 0))
            summary.prompts[role] = summary.prompts.get(role, 0) + int(
                usage.get("prompt_tokens", 0)
            )
    return summary


def write_predictions(out: Path, rows: Iterable[Mapping[str, Any]], model: str) -> Path:
    """``OUT/preds.json`` for the SWE-bench harness: one entry per task with its diff."""
    preds = []
    for row in rows:
        patch_file = out / str(row["id"]) / "diff.patch"
        patch = patch_file.read_text(encoding="utf-8") if patch_file.exists() else ""
        preds.append({"instance_id": row["id"], "model_name_or_path": model, "model_patch": patch})
    path = out / "preds.json"
    path.write_text(json.dumps(preds, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path
