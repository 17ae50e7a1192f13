"""Cost arithmetic: cache-hit, cache-miss and output prices, and DeepSeek's peak-hour multiplier."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from reasonix.control.cost import RoleCost
from reasonix.messages import (
    Usage,
)
from reasonix.providers.models import DEEPSEEK_PEAK, PRESETS, Prices, get_model_info, price_usage

PRICES = Prices(hit=0.5, miss=10.0, output=20.0)


def test_each_token_kind_priced_at_its_own_rate() -> None:
    assert price_usage(Usage(1_000_000, 1_000_000, 0, 0), PRICES) == pytest.approx(0.5)
    assert price_usage(Usage(1_000_000, 0, 1_000_000, 0), PRICES) == pytest.approx(10.0)
    assert price_usage(Usage(0, 0, 0, 1_000_000), PRICES) == pytest.approx(20.0)
    mixed = Usage(
        prompt_tokens=3000, cache_hit_tokens=2000, cache_miss_tokens=1000, completion_tokens=500
    )
    assert price_usage(mixed, PRICES) == pytest.approx((2000 * 0.5 + 1000 * 10 + 500 * 20) / 1e6)


def test_reasoning_tokens_are_part_of_completion_not_charged_twice() -> None:
    with_reasoning = Usage(0, 0, 0, completion_tokens=100, reasoning_tokens=80)
    assert price_usage(with_reasoning, PRICES) == price_usage(Usage(0, 0, 0, 100), PRICES)


def test_cache_hits_are_much_cheaper_on_deepseek_presets() -> None:
    flash = get_model_info("deepseek-v4-flash").prices
    hit = price_usage(Usage(1_000_000, 1_000_000, 0, 0), flash)
    miss = price_usage(Usage(1_000_000, 0, 1_000_000, 0), flash)
    assert hit == pytest.approx(0.003)  # 2026-09-10 off-peak list price
    assert miss == pytest.approx(0.15)
    assert miss / hit >= 20


def test_empty_usage_costs_nothing() -> None:
    assert price_usage(Usage(), PRESETS["deepseek-v4-pro"].prices) == 0.0


FLASH = PRESETS["deepseek-flash"].prices
USAGE = Usage(
    prompt_tokens=10_000, cache_hit_tokens=8_000, cache_miss_tokens=2_000, completion_tokens=1_000
)
OFF_PEAK = (8_000 * 0.003 + 2_000 * 0.15 + 1_000 * 0.60) / 1e6

# 2026-09-14 is a Monday.
MONDAY = datetime(2026, 9, 14, tzinfo=UTC)


@pytest.mark.parametrize(
    ("hour", "minute", "peak"),
    [
        (0, 59, False),
        (1, 0, True),
        (3, 59, True),
        (4, 0, False),
        (5, 30, False),
        (6, 0, True),
        (9, 59, True),
        (10, 0, False),
        (23, 0, False),
    ],
)
def test_peak_windows_weekday(hour: int, minute: int, peak: bool) -> None:
    at = MONDAY.replace(hour=hour, minute=minute)
    expected = OFF_PEAK * (2 if peak else 1)
    assert price_usage(USAGE, FLASH, at) == pytest.approx(expected)


@pytest.mark.parametrize("day", [5, 6])  # Saturday, Sunday
def test_no_peak_at_weekends(day: int) -> None:
    at = MONDAY + timedelta(days=day, hours=2)
    assert price_usage(USAGE, FLASH, at) == pytest.approx(OFF_PEAK)


def test_peak_checked_in_utc() -> None:
    # 09:30 in UTC+8 is 01:30 UTC: peak.
    beijing = timezone(timedelta(hours=8))
    at = datetime(2026, 9, 15, 9, 30, tzinfo=beijing)
    assert price_usage(USAGE, FLASH, at) == pytest.approx(2 * OFF_PEAK)


def test_no_time_means_off_peak_and_models_without_peak_ignore_it() -> None:
    assert price_usage(USAGE, FLASH) == pytest.approx(OFF_PEAK)
    no_peak = Prices(0.01, 0.5, 1.0)  # e.g. a configured model without peak hours
    at = MONDAY.replace(hour=2)
    assert price_usage(USAGE, no_peak, at) == price_usage(USAGE, no_peak)
    # the old flash names are priced like deepseek-flash, peak hours included
    assert PRESETS["deepseek-v4-flash"].prices == FLASH


def test_usage_subtracts_field_by_field_in_one_place() -> None:
    total = Usage(100, 60, 40, 30, 10)
    earlier = Usage(70, 50, 20, 10, 5)
    assert total - earlier == Usage(30, 10, 20, 20, 5)
    assert earlier + (total - earlier) == total
    spent = RoleCost(3, total, 0.5) - RoleCost(1, earlier, 0.2)
    assert spent.requests == 2
    assert spent.usage == Usage(30, 10, 20, 20, 5)
    assert spent.cost == pytest.approx(0.3)


def test_usage_without_prompt_tokens_keeps_prompt_equal_hit_plus_miss() -> None:
    usage = Usage.from_api(
        {"prompt_cache_hit_tokens": 64, "prompt_cache_miss_tokens": 36, "completion_tokens": 3}
    )
    assert usage == Usage(100, 64, 36, 3, 0)
    assert usage.prompt_tokens == usage.cache_hit_tokens + usage.cache_miss_tokens


def test_pro_preset_has_the_current_price_and_peak_hours() -> None:
    prices = PRESETS["deepseek-v4-pro"].prices
    assert (prices.hit, prices.miss, prices.output) == (0.022, 0.66, 1.98)
    assert prices.peak_multiplier == 2.0 and prices.peak_windows == DEEPSEEK_PEAK
    usage = Usage(3_000_000, 1_000_000, 2_000_000, 1_000_000)
    off_peak = price_usage(usage, prices, datetime(2026, 11, 30, 12, tzinfo=UTC))
    assert off_peak == pytest.approx(0.022 + 2 * 0.66 + 1.98)
    peak = price_usage(usage, prices, datetime(2026, 11, 30, 2, tzinfo=UTC))  # Monday 02:00
    assert peak == pytest.approx(2 * off_peak)
