"""Review findings for configuration: syntax errors at the end of a file have a line; the
sources list names a flag layer only when a flag was given."""

from __future__ import annotations

from pathlib import Path

import pytest

from reasonix.cli.commands import build_parser, overrides_from
from reasonix.config import load_config, render_config
from reasonix.errors import ConfigError

ENV = {"DEEPSEEK_API_KEY": "sk-test"}


@pytest.mark.parametrize(
    ("text", "line", "key"),
    [
        ('[executor]\nmodel = "deepseek-v4-flash"\n[permissions]\nallow = ["bash(ls)",\n', 4, None),
        ('[executor]\nmodel = """abc\n\n\n', 2, "executor.model"),
    ],
)
def test_unclosed_value_at_end_of_file_has_a_line(
    tmp_path: Path, text: str, line: int, key: str | None
) -> None:
    (tmp_path / "reasonix.toml").write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path, environ=ENV, user_config=tmp_path / "none.toml")
    err = info.value
    assert err.line == line, str(err)
    assert f"reasonix.toml:{line}" in str(err)
    if key:
        assert err.key == key


def test_sources_name_flags_only_when_a_flag_was_given(tmp_path: Path) -> None:
    (tmp_path / "reasonix.toml").write_text("[executor]\nmax_steps = 9\n")
    parser = build_parser()

    def sources(*argv: str) -> tuple[str, ...]:
        overrides = overrides_from(parser.parse_args([*argv, "config"]))
        config = load_config(
            tmp_path, overrides=overrides, environ=ENV, user_config=tmp_path / "none.toml"
        )
        assert render_config(config, ENV)[0].endswith(", ".join(("default", *config.sources)))
        return config.sources

    assert sources() == (f"project:{tmp_path / 'reasonix.toml'}",)
    assert sources("--mode", "plan")[-1] == "flag"
