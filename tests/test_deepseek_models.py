"""Today's DeepSeek model names and limits (shared/reference/deepseek-api.md, 2026-12-01):
presets, the legacy alias, retired names, effort values, max_tokens, CNY prices, and
``reasonix doctor`` with only the endpoint configured."""

from __future__ import annotations

from pathlib import Path

import pytest

from reasonix.config import load_config
from reasonix.errors import ConfigError
from reasonix.messages import Usage
from reasonix.providers.models import CNY_PRICES, PRESETS, get_model_info, price_usage
from reasonix.testing import Reply
from tests.support.project import Project, project

__all__ = ["project"]


def load(root: Path, toml: str = "", **overrides: object):  # type: ignore[no-untyped-def]
    (root / "reasonix.toml").write_text(toml)
    return load_config(
        root,
        overrides=overrides or None,
        environ={"DEEPSEEK_API_KEY": "sk-test"},
        user_config=root / "no-user.toml",
    )


def test_presets_carry_todays_names_limits_and_prices() -> None:
    flash, pro = PRESETS["deepseek-flash"], PRESETS["deepseek-v4-pro"]
    for info in (flash, pro):
        assert info.context_window == 1_048_576
        assert info.max_output == 393_216
        assert info.prices.peak_multiplier == 2.0
    assert (flash.prices.hit, flash.prices.miss, flash.prices.output) == (0.003, 0.15, 0.60)
    assert (pro.prices.hit, pro.prices.miss, pro.prices.output) == (0.022, 0.66, 1.98)
    cny_flash, cny_pro = CNY_PRICES["deepseek-flash"], CNY_PRICES["deepseek-v4-pro"]
    assert (cny_flash.hit, cny_flash.miss, cny_flash.output) == (0.02, 1.0, 4.0)
    assert (cny_pro.hit, cny_pro.miss, cny_pro.output) == (0.15, 4.5, 13.5)


def test_the_legacy_alias_is_the_same_preset() -> None:
    alias, flash = PRESETS["deepseek-v4-flash"], PRESETS["deepseek-flash"]
    assert (alias.context_window, alias.max_output, alias.prices) == (
        flash.context_window,
        flash.max_output,
        flash.prices,
    )


def test_default_models(tmp_path: Path) -> None:
    config = load(tmp_path)
    assert config.executor.model == "deepseek-flash"
    assert config.planner.model == "deepseek-v4-pro"


@pytest.mark.parametrize("name", ["deepseek-chat", "deepseek-reasoner"])
def test_retired_names_are_a_clear_config_error(tmp_path: Path, name: str) -> None:
    with pytest.raises(ConfigError) as info:
        load(tmp_path, f'[executor]\nmodel = "{name}"\n')
    text = str(info.value)
    assert "retired" in text and "deepseek-flash" in text and "deepseek-v4-pro" in text
    assert "executor.model" in text
    with pytest.raises(Exception, match="retired"):
        get_model_info(name)


def test_effort_values(tmp_path: Path) -> None:
    for effort, sent in (("low", "low"), ("high", "high"), ("max", "max"), ("medium", "high")):
        config = load(tmp_path, f'[executor]\neffort = "{effort}"\n')
        assert config.executor.reasoning_effort == sent
        assert config.executor.thinking
    off = load(tmp_path, '[executor]\neffort = "off"\n')
    assert off.executor.reasoning_effort is None and not off.executor.thinking
    with pytest.raises(ConfigError, match="effort"):
        load(tmp_path, '[executor]\neffort = "xhigh"\n')


def test_max_tokens_default_and_config(tmp_path: Path) -> None:
    config = load(tmp_path)
    assert config.executor.max_tokens >= 65_536
    assert config.planner.max_tokens >= 65_536
    assert load(tmp_path, "[executor]\nmax_tokens = 200000\n").executor.max_tokens == 200_000
    with pytest.raises(ConfigError, match="max_tokens"):
        load(tmp_path, "[executor]\nmax_tokens = 0\n")


def test_currency_setting(tmp_path: Path) -> None:
    assert load(tmp_path).ui.currency == "USD"
    assert load(tmp_path, '[ui]\ncurrency = "CNY"\n').ui.currency == "CNY"
    with pytest.raises(ConfigError, match="currency"):
        load(tmp_path, '[ui]\ncurrency = "EUR"\n')


def test_cny_costs_use_the_cny_list() -> None:
    usage = Usage(1_000_000, 500_000, 500_000, 1_000_000, 0)
    assert price_usage(usage, CNY_PRICES["deepseek-flash"]) == pytest.approx(0.01 + 0.5 + 4.0)


@pytest.mark.slow
def test_max_tokens_and_effort_reach_the_wire(project: Project) -> None:
    project.write_toml('\n[ui]\ncurrency = "CNY"\n')
    toml = project.root / "reasonix.toml"
    text = toml.read_text().replace(
        "max_steps = 12\n", 'max_steps = 12\nmax_tokens = 150000\neffort = "medium"\n'
    )
    toml.write_text(text)
    project.ex.push(Reply.text("ok"))
    proc = project.run("run", "--yes", "hello")
    assert proc.returncode == 0, proc.stderr
    body = project.ex.requests[0].body
    assert body["max_tokens"] == 150_000
    assert body["reasoning_effort"] == "high"


@pytest.mark.slow
def test_doctor_passes_with_only_the_endpoint_configured(project: Project) -> None:
    # the user's own config names the endpoint; nothing else is configured
    (project.root / "reasonix.toml").unlink()
    (project.config_dir / "config.toml").write_text(
        f'[[providers]]\nname = "deepseek"\nbase_url = "{project.ex.base_url}"\n'
    )
    proc = project.run("doctor", env=project.env(DEEPSEEK_API_KEY="sk-test"))
    out = proc.stdout
    assert proc.returncode == 0, out
    assert "serves deepseek-flash" in out
    assert "serves deepseek-v4-pro" in out
    assert "balance 110.00 USD" in out


@pytest.mark.slow
def test_doctor_counts_the_legacy_alias_as_served(project: Project) -> None:
    toml = project.root / "reasonix.toml"
    toml.write_text(toml.read_text().replace('"deepseek-flash"', '"deepseek-v4-flash"'))
    proc = project.run("doctor")
    assert proc.returncode == 0, proc.stdout
    assert "serves deepseek-v4-flash (an alias of deepseek-flash, which it lists)" in proc.stdout
