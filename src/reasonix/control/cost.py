"""Per-role cost accounting, fed by usage events."""

from __future__ import annotations

from dataclasses import dataclass, field

from reasonix.events import Event, ToolCharged, UsageEvent, charge_source
from reasonix.messages import Usage


@dataclass(frozen=True, slots=True)
class RoleCost:
    """Totals for one usage source: requests, tokens split into cache hit/miss, output, cost."""

    requests: int = 0
    usage: Usage = field(default_factory=Usage)
    cost: float = 0.0
    #: the same in CNY, from DeepSeek's CNY price list (0 when no CNY prices are known)
    cost_cny: float = 0.0
    #: how many of the requests were interrupted or broke before their usage arrived: their
    #: tokens are an estimate from what streamed
    estimated: int = 0
    #: estimated input tokens of images (already inside ``usage.prompt_tokens``)
    image_tokens: int = 0

    def __add__(self, other: RoleCost) -> RoleCost:
        return RoleCost(
            self.requests + other.requests,
            self.usage + other.usage,
            self.cost + other.cost,
            self.cost_cny + other.cost_cny,
            self.estimated + other.estimated,
            self.image_tokens + other.image_tokens,
        )

    def __sub__(self, other: RoleCost) -> RoleCost:
        return RoleCost(
            self.requests - other.requests,
            self.usage - other.usage,
            self.cost - other.cost,
            self.cost_cny - other.cost_cny,
            self.estimated - other.estimated,
            self.image_tokens - other.image_tokens,
        )

    @property
    def hit_ratio(self) -> float:
        return self.usage.hit_ratio

    def to_dict(self) -> dict[str, object]:
        return {
            "requests": self.requests,
            **self.usage.to_dict(),
            "cost_usd": round(self.cost, 8),
            "cache_hit_ratio": round(self.hit_ratio, 4),
            # requests counted from what streamed (the usage never arrived): an estimate
            **({"estimated_requests": self.estimated} if self.estimated else {}),
            # images' share of the input, estimated (DeepSeek reports no separate figure)
            **({"image_tokens_estimated": self.image_tokens} if self.image_tokens else {}),
        }


class CostTracker:
    """A sink that sums usage events per source (``executor``, ``planner``, ``compaction``)."""

    def __init__(self, earlier: float = 0.0) -> None:
        self.by_source: dict[str, RoleCost] = {}
        self.models: dict[str, str] = {}
        #: USD the session spent in earlier runs (a resumed session): budgets count it too
        self.earlier = earlier

    def emit(self, event: Event) -> None:
        if isinstance(event, UsageEvent):
            key = str(event.source)
            self.by_source[key] = self.by_source.get(key, RoleCost()) + RoleCost(
                1,
                event.usage,
                event.cost,
                event.cost_cny or 0.0,
                int(event.estimated),
                event.image_tokens,
            )
            self.models[key] = event.model
        elif isinstance(event, ToolCharged):
            # A paid tool gets its own line, named by the service and the role that called it
            # (``web_search`` for the executor): requests made, dollars of the billed ones.
            key = charge_source(event.service, str(event.source))
            self.by_source[key] = self.by_source.get(key, RoleCost()) + RoleCost(
                event.requests, Usage(), event.cost, event.cost_cny
            )
            self.models[key] = event.service

    def snapshot(self) -> dict[str, RoleCost]:
        return dict(self.by_source)

    def since(self, mark: dict[str, RoleCost]) -> dict[str, RoleCost]:
        out = {}
        for key, total in self.by_source.items():
            diff = total - mark.get(key, RoleCost())
            if diff.requests:
                out[key] = diff
        return out

    @property
    def session_cost(self) -> float:
        """USD the whole session has spent: earlier runs plus this one (what budgets see)."""
        return self.earlier + self.total.cost

    @property
    def total(self) -> RoleCost:
        total = RoleCost()
        for item in self.by_source.values():
            total = total + item
        return total


#: Column heading of the cost in each currency ``[ui] currency`` may name.
CURRENCY_HEADINGS = {"USD": "cost $", "CNY": "cost ¥"}


def format_cost_table(by_source: dict[str, RoleCost], currency: str = "USD") -> str:
    """A plain-text table: one row per role plus a total, costs in ``currency`` (USD or CNY)."""
    header = (
        f"{'role':<11}{'reqs':>5}{'input':>10}{'hit':>10}{'miss':>9}{'output':>9}"
        f"{'hit%':>7}{CURRENCY_HEADINGS.get(currency, 'cost $'):>11}"
    )
    rows = [header]
    total = RoleCost()
    for role in sorted(by_source):
        c = by_source[role]
        total = total + c
        rows.append(_row(role, c, currency))
    rows.append(_row("total", total, currency))
    if total.image_tokens:
        rows.append(
            f"images: about {total.image_tokens} of the input tokens (estimated; DeepSeek "
            "counts them inside the input and reports no separate figure)."
        )
    if total.estimated:
        rows.append(
            f"~ includes an estimate for {total.estimated} interrupted or broken request(s): "
            "their usage never arrived, so their tokens are counted from what streamed."
        )
    return "\n".join(rows)


def _row(name: str, c: RoleCost, currency: str) -> str:
    u = c.usage
    cost = c.cost_cny if currency == "CNY" else c.cost
    mark = " ~" if c.estimated else ""
    return (
        f"{name:<11}{c.requests:>5}{u.prompt_tokens:>10}{u.cache_hit_tokens:>10}"
        f"{u.cache_miss_tokens:>9}{u.completion_tokens:>9}{c.hit_ratio * 100:>6.1f}%"
        f"{cost:>11.6f}{mark}"
    )
