"""The clean environment every CLI test runs the real command in: nothing of the developer's own
reasonix or DeepSeek settings leaks into a test, and the isolated form keeps only what it names."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli import FAKE_KEY_ENV, cli_env, run_cli


def test_the_runners_own_settings_never_reach_the_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-the-developers-real-key")
    monkeypatch.setenv("REASONIX_CONFIG_DIR", "/home/dev/.config/reasonix")
    monkeypatch.setenv("RAY_ADDRESS", "ray://somewhere")
    monkeypatch.setenv("KEEP_ME", "1")
    env = cli_env(tmp_path / "data", tmp_path / "cfg", drop=("RAY_",), EXTRA="x")
    assert "DEEPSEEK_API_KEY" not in env
    assert "RAY_ADDRESS" not in env
    assert "PYTEST_CURRENT_TEST" not in env
    assert env["REASONIX_CONFIG_DIR"] == str(tmp_path / "cfg")
    assert env["REASONIX_DATA_DIR"] == str(tmp_path / "data")
    assert env[FAKE_KEY_ENV] == "sk-test"
    assert env["KEEP_ME"] == "1"
    assert env["EXTRA"] == "x"


def test_the_isolated_form_holds_only_what_it_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KEEP_ME", "1")
    env = cli_env(tmp_path / "data", tmp_path / "cfg", key=None, inherit=False, HOME="/h")
    assert set(env) == {
        "PATH",
        "LANG",
        "HOME",
        "REASONIX_DATA_DIR",
        "REASONIX_CONFIG_DIR",
        "PYTHONUNBUFFERED",
        "NO_COLOR",
    }


@pytest.mark.slow
def test_the_command_runs_in_that_environment(tmp_path: Path) -> None:
    proc = run_cli(["--version"], cwd=tmp_path, env=cli_env(tmp_path / "d", tmp_path / "c"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip()
