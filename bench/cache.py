"""Cache efficiency and cost per role, over the scripted dual-model session (scenario.py).

Cache efficiency compares each request's cache-hit tokens with the hits a pure-append history
could get: for request n after request n-1 of the same role and session epoch,
``ideal(n) = floor(min(stored_after_output(n-1), prompt(n)) / unit) * unit`` — everything the
previous request sent and received, in whole cache units. The first request of a session, the
compaction's summary request and the first request after a compaction are the planned cold
points: they are reported on their own and left out of the ratio.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import print_table, verdict
from bench.scenario import (
    EXECUTOR_MODEL,
    PLANNER_MODEL,
    UNIT_TOKENS,
    SessionRun,
    is_summary,
    run_session_sync,
)
from reasonix.events import UsageSource
from reasonix.messages import Usage
from reasonix.providers.models import PRESETS, price_usage
from reasonix.testing.fake_server import RecordedRequest

_RUN: SessionRun | None = None


def session() -> SessionRun:
    """The scripted session, run once per process and shared by the two sections."""
    global _RUN
    if _RUN is None:
        with tempfile.TemporaryDirectory(prefix="reasonix-bench-") as tmp:
            _RUN = run_session_sync(Path(tmp))
    return _RUN


@dataclass
class RoleCache:
    requests: int = 0
    prompt_tokens: int = 0
    hit_tokens: int = 0
    measured: int = 0
    measured_hits: int = 0
    ideal_hits: int = 0
    short_requests: int = 0  # requests that got fewer hits than ideal
    cold: list[dict[str, Any]] | None = None

    @property
    def ratio(self) -> float:
        return self.measured_hits / self.ideal_hits if self.ideal_hits else 1.0


def _kind(req: RecordedRequest, prev: RecordedRequest | None) -> str:
    if is_summary(req):
        return "compaction_summary"
    if prev is None:
        return "first_request"
    if is_summary(prev):
        return "first_after_compaction"
    return "steady"


def analyse(requests: list[RecordedRequest], unit: int = UNIT_TOKENS) -> RoleCache:
    out = RoleCache(cold=[])
    prev: RecordedRequest | None = None
    for req in requests:
        prompt, hit = req.prompt_tokens or 0, req.cache_hit_tokens or 0
        out.requests += 1
        out.prompt_tokens += prompt
        out.hit_tokens += hit
        kind = _kind(req, prev)
        if kind == "steady" and prev is not None:
            stored = prev.stored_tokens_after_output or 0
            ideal = (min(stored, prompt) // unit) * unit
            out.measured += 1
            out.measured_hits += hit
            out.ideal_hits += ideal
            out.short_requests += hit < ideal
        else:
            assert out.cold is not None
            out.cold.append({"request": req.index, "kind": kind, "prompt": prompt, "hit": hit})
        prev = req
    return out


def run_cache(quick: bool) -> dict[str, Any]:
    run = session()
    roles = {role: analyse(run.requests(role)) for role in ("executor", "planner")}
    rows = []
    for role, c in roles.items():
        rows.append(
            [
                role,
                c.requests,
                c.prompt_tokens,
                c.hit_tokens,
                f"{c.hit_tokens / c.prompt_tokens:.1%}" if c.prompt_tokens else "-",
                c.measured,
                c.measured_hits,
                c.ideal_hits,
                f"{c.ratio:.2%}",
                verdict(c.ratio >= 1.0),
            ]
        )
    print_table(
        f"Cache efficiency (scripted session: {run.executor_steps} executor steps, "
        f"{run.planning_rounds} planning rounds, {run.replans} re-plan, "
        f"{run.compactions} compaction; unit {UNIT_TOKENS} tokens)",
        rows,
        [
            "role",
            "reqs",
            "prompt",
            "hit",
            "hit/prompt",
            "measured",
            "hits",
            "ideal",
            "hits/ideal",
            "target 100%",
        ],
    )
    cold_rows = [
        [role, c["request"], c["kind"], c["prompt"], c["hit"]]
        for role, rc in roles.items()
        for c in rc.cold or []
    ]
    print_table(
        "Planned cold points (left out of the ratio)",
        cold_rows,
        ["role", "request", "kind", "prompt", "hit"],
    )
    if run.problems:
        print("  problems: " + "; ".join(run.problems))
    return {
        "unit_tokens": UNIT_TOKENS,
        "executor_steps": run.executor_steps,
        "planning_rounds": run.planning_rounds,
        "replans": run.replans,
        "compactions": run.compactions,
        "problems": run.problems,
        "roles": {
            role: {
                "requests": c.requests,
                "prompt_tokens": c.prompt_tokens,
                "cache_hit_tokens": c.hit_tokens,
                "measured_requests": c.measured,
                "measured_hit_tokens": c.measured_hits,
                "ideal_hit_tokens": c.ideal_hits,
                "hit_over_ideal": round(c.ratio, 6),
                "requests_below_ideal": c.short_requests,
                "excluded": c.cold,
            }
            for role, c in roles.items()
        },
        "target_met": all(c.ratio >= 1.0 for c in roles.values()),
    }


def run_cost(quick: bool) -> dict[str, Any]:
    run = session()
    flash, pro = PRESETS[EXECUTOR_MODEL].prices, PRESETS[PLANNER_MODEL].prices
    by_role: dict[str, Usage] = {}
    for event in run.usage_events:
        # compaction is the executor's session summarised by the executor's own model
        role = "planner" if event.source == UsageSource.PLANNER else "executor"
        by_role[role] = by_role.get(role, Usage()) + event.usage
    split = {
        role: price_usage(u, flash if role == "executor" else pro) for role, u in by_role.items()
    }
    all_pro = {role: price_usage(u, pro) for role, u in by_role.items()}
    total, total_pro = sum(split.values()), sum(all_pro.values())
    saving = 1 - total / total_pro if total_pro else 0.0
    rows = [
        [
            role,
            u.prompt_tokens,
            u.cache_hit_tokens,
            u.cache_miss_tokens,
            u.completion_tokens,
            f"{split[role]:.6f} ({EXECUTOR_MODEL if role == 'executor' else PLANNER_MODEL})",
            f"{all_pro[role]:.6f}",
        ]
        for role, u in sorted(by_role.items())
    ]
    rows.append(["total", "", "", "", "", f"{total:.6f}", f"{total_pro:.6f}"])
    print_table(
        f"Cost per role, USD (planner on {PLANNER_MODEL}, executor on {EXECUTOR_MODEL}, vs "
        f"{PLANNER_MODEL} for both): saving {saving:.1%}",
        rows,
        ["role", "prompt", "hit", "miss", "output", "dual-model $", "all-pro $"],
    )
    return {
        "prices_per_million": {
            EXECUTOR_MODEL: [flash.hit, flash.miss, flash.output],
            PLANNER_MODEL: [pro.hit, pro.miss, pro.output],
        },
        "roles": {
            role: {
                **u.to_dict(),
                "cost_usd": round(split[role], 8),
                "cost_usd_all_pro": round(all_pro[role], 8),
            }
            for role, u in by_role.items()
        },
        "total_usd": round(total, 8),
        "total_usd_all_pro": round(total_pro, 8),
        "saving": round(saving, 4),
    }
