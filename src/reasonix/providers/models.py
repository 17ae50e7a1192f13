"""Model presets (context window, output limit, prices) kept as data, and cost arithmetic.

Prices are USD per 1M tokens (``CNY_PRICES`` holds DeepSeek's CNY list for the presets).
DeepSeek changes names and prices often: presets only fill in what
config leaves out; ``[models."name"]`` in config overrides or adds any model.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from reasonix.errors import UnknownModelError

if TYPE_CHECKING:
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
    """Limits and USD prices of one model (a preset, or a ``[models."name"]`` config table)."""

    name: str
    context_window: int = 128_000
    max_output: int = 8_192
    prices: Prices = field(default=ZERO_PRICES)
    supports_thinking: bool = False
    #: the model reads images (its ``GET /models`` entry lists the ``image`` input modality)
    accepts_images: bool = False


def price_usage(usage: Usage, prices: Prices, at: datetime | None = None) -> float:
    """Cost in USD of ``usage`` at ``prices`` (peak multiplier applied when ``at`` is peak)."""
    base = (
        usage.cache_hit_tokens * prices.hit
        + usage.cache_miss_tokens * prices.miss
        + usage.completion_tokens * prices.output
    ) / 1_000_000
    return base * prices.multiplier_at(at)


_WEEKDAYS = (0, 1, 2, 3, 4)
#: Since 2026-08: Mon–Fri 01:00–04:00 and 06:00–10:00 UTC cost twice the off-peak rate.
DEEPSEEK_PEAK = (PeakWindow(_WEEKDAYS, 1, 4), PeakWindow(_WEEKDAYS, 6, 10))

#: What ``GET /models`` reports for today's DeepSeek models.
DEEPSEEK_CONTEXT_WINDOW = 1_048_576
DEEPSEEK_MAX_OUTPUT = 393_216


def _peak(hit: float, miss: float, output: float) -> Prices:
    return Prices(hit, miss, output, peak_multiplier=2.0, peak_windows=DEEPSEEK_PEAK)


_FLASH = ModelInfo(
    "deepseek-flash",
    context_window=DEEPSEEK_CONTEXT_WINDOW,
    max_output=DEEPSEEK_MAX_OUTPUT,
    # 2026-09-10 off-peak list price (the 2026-05 price of deepseek-v4-flash was
    # 0.0028 / 0.14 / 0.28).
    prices=_peak(0.003, 0.15, 0.60),
    supports_thinking=True,
    accepts_images=True,
)
_PRO = ModelInfo(
    "deepseek-v4-pro",
    context_window=DEEPSEEK_CONTEXT_WINDOW,
    max_output=DEEPSEEK_MAX_OUTPUT,
    # 2026-09-10 off-peak list price (the 2026-05 price was 0.003625 / 0.435 / 0.87).
    prices=_peak(0.022, 0.66, 1.98),
    supports_thinking=True,
)

#: Names a server still accepts for another model (billed as it, not listed by ``GET /models``).
MODEL_ALIASES: Mapping[str, str] = {"deepseek-v4-flash": "deepseek-flash"}

#: Built-in presets: today's models, and each alias as the same preset under its own name.
#: Off-peak prices with DeepSeek's 2x peak multiplier.
PRESETS: Mapping[str, ModelInfo] = {
    "deepseek-flash": _FLASH,
    "deepseek-v4-pro": _PRO,
    "deepseek-v4-flash": replace(_FLASH, name="deepseek-v4-flash"),
}

#: CNY per 1M tokens (off-peak; the same peak windows and multiplier) for the presets, used
#: when ``[ui] currency = "CNY"``. DeepSeek publishes both lists; neither is a conversion.
CNY_PRICES: Mapping[str, Prices] = {
    "deepseek-flash": _peak(0.02, 1.0, 4.0),
    "deepseek-v4-flash": _peak(0.02, 1.0, 4.0),
    "deepseek-v4-pro": _peak(0.15, 4.5, 13.5),
}

#: Names DeepSeek retired (2026-07-24); requests with them now answer 400.
RETIRED_MODELS: Mapping[str, str] = {
    "deepseek-chat": "deepseek-flash",
    "deepseek-reasoner": "deepseek-flash",
}

DEFAULT_EXECUTOR_MODEL = "deepseek-flash"
DEFAULT_PLANNER_MODEL = "deepseek-v4-pro"
#: Default ``max_tokens`` per request of each role: room to write large files through tool
#: arguments (DeepSeek's own default is 8K without thinking, 64K with; reasoning counts too).
DEFAULT_MAX_TOKENS = 131_072


def served_names(name: str) -> tuple[str, ...]:
    """``name`` and every name the server may list for the same model (alias and target)."""
    names = {name}
    names.update(target for alias, target in MODEL_ALIASES.items() if alias == name)
    names.update(alias for alias, target in MODEL_ALIASES.items() if target == name)
    return tuple(sorted(names))


def retired_model_message(name: str) -> str | None:
    """What to tell a user who configured a retired model name (None for any other name)."""
    if name not in RETIRED_MODELS:
        return None
    today = ", ".join(sorted({DEFAULT_EXECUTOR_MODEL, DEFAULT_PLANNER_MODEL}))
    return (
        f"{name!r} was retired by DeepSeek on 2026-07-24 and now answers 400; use one of "
        f'today\'s models: {today} (e.g. model = "{RETIRED_MODELS[name]}")'
    )


def prices_in(currency: str, name: str, usd: Prices) -> Prices | None:
    """The prices of model ``name`` in ``currency`` (``USD`` gives ``usd``); None when no price
    list in that currency is known for it."""
    if currency == "USD":
        return usd
    if currency == "CNY":
        return CNY_PRICES.get(name)
    return None


def get_model_info(name: str, overrides: Mapping[str, ModelInfo] | None = None) -> ModelInfo:
    """Look a model up in ``overrides`` (from config) then in the presets."""
    if overrides and name in overrides:
        return overrides[name]
    if name in PRESETS:
        return PRESETS[name]
    retired = retired_model_message(name)
    if retired is not None:
        raise UnknownModelError(retired)
    known = ", ".join(sorted(set(PRESETS) | set(overrides or {})))
    raise UnknownModelError(
        f"Unknown model {name!r}: no preset and no [models.{name!r}] entry in config. "
        f'Known models: {known}. Add a [models."{name}"] table with context_window and prices '
        "to use another model."
    )
