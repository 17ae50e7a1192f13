"""Model presets (context window, output limit, prices) kept as data, and cost arithmetic.

Prices are USD per 1M tokens. DeepSeek changes names and prices often: presets only fill in what
config leaves out; ``[models."name"]`` in config overrides or adds any model.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from reasonix.errors import UnknownModelError
from reasonix.messages import Usage


@dataclass(frozen=True, slots=True)
class PeakWindow:
    """A weekly window (UTC) in which prices are multiplied. ``weekdays``: 0=Monday."""

    weekdays: tuple[int, ...]
    start_hour: int
    end_hour: int

    def contains(self, at: datetime) -> bool:
        at = at.astimezone(UTC)
        return at.weekday() in self.weekdays and self.start_hour <= at.hour < self.end_hour


@dataclass(frozen=True, slots=True)
class Prices:
    """USD per 1M tokens: cache hit, cache miss, output; optional peak-hour multiplier."""

    hit: float
    miss: float
    output: float
    peak_multiplier: float = 1.0
    peak_windows: tuple[PeakWindow, ...] = ()

    def multiplier_at(self, at: datetime | None) -> float:
        if at is None or self.peak_multiplier == 1.0:
            return 1.0
        return self.peak_multiplier if any(w.contains(at) for w in self.peak_windows) else 1.0


ZERO_PRICES = Prices(0.0, 0.0, 0.0)


@dataclass(frozen=True, slots=True)
class ModelInfo:
    name: str
    context_window: int = 128_000
    max_output: int = 8_192
    prices: Prices = field(default=ZERO_PRICES)
    supports_thinking: bool = False


def price_usage(usage: Usage, prices: Prices, at: datetime | None = None) -> float:
    """Cost in USD of ``usage`` at ``prices`` (peak multiplier applied when ``at`` is peak)."""
    base = (
        usage.cache_hit_tokens * prices.hit
        + usage.cache_miss_tokens * prices.miss
        + usage.completion_tokens * prices.output
    ) / 1_000_000
    return base * prices.multiplier_at(at)


_WEEKDAYS = (0, 1, 2, 3, 4)
DEEPSEEK_PEAK = (PeakWindow(_WEEKDAYS, 1, 4), PeakWindow(_WEEKDAYS, 6, 10))

_FLASH = ModelInfo(
    "deepseek-v4-flash",
    context_window=1_000_000,
    max_output=384_000,
    # 2026-09-10 off-peak list price of flash (the 2026-05 price was 0.0028 / 0.14 / 0.28).
    # Since then ``deepseek-flash`` is the official name and the older flash names are served
    # as the same model, so they are priced the same.
    prices=Prices(0.003, 0.15, 0.60, peak_multiplier=2.0, peak_windows=DEEPSEEK_PEAK),
    supports_thinking=True,
)
_PRO = ModelInfo(
    "deepseek-v4-pro",
    context_window=1_000_000,
    max_output=384_000,
    # 2026-09-10 off-peak list price (the 2026-05 price was 0.003625 / 0.435 / 0.87).
    prices=Prices(0.022, 0.66, 1.98, peak_multiplier=2.0, peak_windows=DEEPSEEK_PEAK),
    supports_thinking=True,
)

#: Built-in presets. Off-peak prices with a 2x peak multiplier where DeepSeek announced one.
PRESETS: Mapping[str, ModelInfo] = {
    "deepseek-v4-flash": _FLASH,
    "deepseek-v4-pro": _PRO,
    "deepseek-flash": replace(_FLASH, name="deepseek-flash"),
    "deepseek-chat": replace(_FLASH, name="deepseek-chat", supports_thinking=False),
    "deepseek-reasoner": replace(_FLASH, name="deepseek-reasoner"),
}

#: Names a server still accepts for another model (billed as it, not listed by ``GET /models``).
MODEL_ALIASES: Mapping[str, str] = {"deepseek-v4-flash": "deepseek-flash"}


def served_names(name: str) -> tuple[str, ...]:
    """``name`` and every name the server may list for the same model (alias and target)."""
    names = {name}
    names.update(target for alias, target in MODEL_ALIASES.items() if alias == name)
    names.update(alias for alias, target in MODEL_ALIASES.items() if target == name)
    return tuple(sorted(names))


DEFAULT_EXECUTOR_MODEL = "deepseek-v4-flash"
DEFAULT_PLANNER_MODEL = "deepseek-v4-pro"


def get_model_info(name: str, overrides: Mapping[str, ModelInfo] | None = None) -> ModelInfo:
    """Look a model up in ``overrides`` (from config) then in the presets."""
    if overrides and name in overrides:
        return overrides[name]
    if name in PRESETS:
        return PRESETS[name]
    known = ", ".join(sorted(set(PRESETS) | set(overrides or {})))
    raise UnknownModelError(
        f"Unknown model {name!r}: no preset and no [models.{name!r}] entry in config. "
        f'Known models: {known}. Add a [models."{name}"] table with context_window and prices '
        "to use another model."
    )
