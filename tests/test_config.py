from __future__ import annotations

import dataclasses
import textwrap
from pathlib import Path

import pytest

from reasonix.cli.commands import build_parser, overrides_from
from reasonix.config import (
    Config,
    check_credentials,
    load_config,
    render_config,
    user_config_path,
)
from reasonix.config._locate import locate
from reasonix.errors import ConfigError
from reasonix.providers.models import PRESETS

KEY_ENV = {"DEEPSEEK_API_KEY": "sk-test"}


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    project = tmp_path / "project"
    user = tmp_path / "user"
    project.mkdir()
    user.mkdir()
    return project, user


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def load(dirs: tuple[Path, Path], **kwargs: object) -> Config:
    project, user = dirs
    env = {"REASONIX_CONFIG_DIR": str(user), **KEY_ENV}
    return load_config(project, environ=env, **kwargs)  # type: ignore[arg-type]


def error_of(dirs: tuple[Path, Path], text: str, where: str = "project") -> ConfigError:
    project, user = dirs
    target = project / "reasonix.toml" if where == "project" else user / "config.toml"
    write(target, text)
    with pytest.raises(ConfigError) as info:
        load(dirs)
    return info.value


# --- defaults ----------------------------------------------------------------------------------


def test_defaults_with_deepseek_key(dirs: tuple[Path, Path]) -> None:
    config = load(dirs)
    assert config.executor.provider == "deepseek"
    assert config.executor.model == "deepseek-flash"
    assert config.executor.effort == "high"
    assert config.executor.thinking
    assert config.executor.max_steps == 50
    assert config.planner.enabled
    assert config.planner.model == "deepseek-v4-pro"
    assert config.planner.gate == "auto"
    deepseek = config.provider_for(config.executor)
    assert deepseek.base_url == "https://api.deepseek.com"
    assert deepseek.api_key_env == "DEEPSEEK_API_KEY"
    assert deepseek.api_key(KEY_ENV) == "sk-test"
    assert config.permissions.mode == "ask"
    assert config.workspace.read_deny == ()  # extras on top of the sandbox's built-in list
    assert config.compaction.threshold == 0.8
    assert config.model_info("deepseek-v4-flash") == PRESETS["deepseek-v4-flash"]
    assert config.sources == ()
    assert set(config.provenance.values()) == {"default"}
    assert check_credentials(config, KEY_ENV) == []


def test_defaults_without_key_still_load_and_explain(dirs: tuple[Path, Path]) -> None:
    project, user = dirs
    config = load_config(project, environ={"REASONIX_CONFIG_DIR": str(user)})
    assert config.executor.model == "deepseek-flash"
    problems = check_credentials(config, {"DEEPSEEK_API_KEY": ""})
    assert len(problems) == 1  # one provider shared by both roles: one message
    assert "DEEPSEEK_API_KEY" in problems[0]
    assert "export DEEPSEEK_API_KEY=" in problems[0]
    assert "executor and planner" in problems[0]


def test_credentials_ignore_keyless_local_provider(dirs: tuple[Path, Path]) -> None:
    write(
        dirs[0] / "reasonix.toml",
        """
        [executor]
        provider = "local"
        model = "deepseek-flash"
        [planner]
        enabled = false
        [[providers]]
        name = "local"
        base_url = "http://127.0.0.1:8080/v1"
        """,
    )
    config = load(dirs)
    assert check_credentials(config, {}) == []
    assert config.providers["local"].api_key({}) is None


def test_user_config_path_honours_env(tmp_path: Path) -> None:
    assert user_config_path({"REASONIX_CONFIG_DIR": str(tmp_path)}) == tmp_path / "config.toml"
    assert user_config_path({}).name == "config.toml"


# --- precedence and provenance -----------------------------------------------------------------


def test_precedence_flags_over_project_over_user_over_defaults(dirs: tuple[Path, Path]) -> None:
    project, user = dirs
    user_file = write(
        user / "config.toml",
        """
        [executor]
        model = "deepseek-v4-pro"
        max_steps = 10
        effort = "low"
        [permissions]
        mode = "auto-edit"
        deny = ["bash(rm -rf *)"]
        """,
    )
    project_file = write(
        project / "reasonix.toml",
        """
        [executor]
        max_steps = 20
        [permissions]
        mode = "plan"
        """,
    )
    config = load(dirs, overrides={"permissions.mode": "yolo", "executor.effort": "off"})
    assert config.executor.model == "deepseek-v4-pro"  # user
    assert config.executor.max_steps == 20  # project over user
    assert config.permissions.mode == "yolo"  # flag over project
    assert config.executor.effort == "off"
    assert not config.executor.thinking
    assert config.permissions.deny == ("bash(rm -rf *)",)
    p = config.provenance
    assert p["executor.model"] == f"user:{user_file}"
    assert p["executor.max_steps"] == f"project:{project_file}"
    assert p["permissions.mode"] == "flag"
    assert p["permissions.deny"] == f"user:{user_file}"
    assert p["planner.model"] == "default"
    assert p["providers.deepseek.base_url"] == "default"
    assert p["models.deepseek-v4-flash.context_window"] == "default"
    assert config.sources == (f"user:{user_file}", f"project:{project_file}", "flag")


def test_flag_values_are_coerced_from_strings(dirs: tuple[Path, Path]) -> None:
    config = load(
        dirs,
        overrides={
            "executor.max_steps": "7",
            "planner.enabled": "false",
            "compaction.threshold": "0.5",
            "permissions.allow": "bash(ls*), read(*)",
            "executor.model": None,  # a flag that was not given
        },
    )
    assert config.executor.max_steps == 7
    assert config.planner.enabled is False
    assert config.compaction.threshold == 0.5
    assert config.permissions.allow == ("bash(ls*)", "read(*)")
    # An executor-only setup does not need the planner's key.
    assert "executor uses" in check_credentials(config, {})[0]


def test_bad_flags_name_the_key(dirs: tuple[Path, Path]) -> None:
    with pytest.raises(ConfigError) as info:
        load(dirs, overrides={"executor.max_steps": "many"})
    assert "[executor.max_steps]" in str(info.value)
    assert "command-line flag" in str(info.value)
    with pytest.raises(ConfigError) as info:
        load(dirs, overrides={"executor.modle": "x"})
    assert 'did you mean "model"' in str(info.value)
    with pytest.raises(ConfigError) as info:
        load(dirs, overrides={"permissions.mode": "yes"})
    assert "ask, auto-edit, auto, plan, yolo" in str(info.value)


def test_providers_merge_by_name_and_models_override_presets(dirs: tuple[Path, Path]) -> None:
    project, user = dirs
    write(
        user / "config.toml",
        """
        [[providers]]
        name = "deepseek"
        base_url = "https://proxy.example/v1"
        headers = { "X-Team" = "core" }
        """,
    )
    write(
        project / "reasonix.toml",
        """
        [executor]
        provider = "other"
        model = "qwen2.5-coder"

        [[providers]]
        name = "other"
        kind = "openai"
        base_url = "http://127.0.0.1:9000/v1"
        api_key_env = "OTHER_KEY"
        extra_body = { top_k = 20 }

        [models."qwen2.5-coder"]
        context_window = 32768
        prices = { hit = 0.01, miss = 0.1, output = 0.2 }

        [models."deepseek-v4-pro"]
        context_window = 500000
        """,
    )
    config = load(dirs)
    deepseek = config.providers["deepseek"]
    assert deepseek.base_url == "https://proxy.example/v1"
    assert deepseek.api_key_env == "DEEPSEEK_API_KEY"  # kept from the default entry
    assert dict(deepseek.headers) == {"X-Team": "core"}
    other = config.providers["other"]
    assert dict(other.extra_body) == {"top_k": 20}
    qwen = config.model_info("qwen2.5-coder")
    assert qwen.context_window == 32768
    assert qwen.prices.miss == 0.1
    pro = config.model_info("deepseek-v4-pro")
    assert pro.context_window == 500000
    assert pro.prices == PRESETS["deepseek-v4-pro"].prices  # the rest from the preset
    assert config.provenance['models."qwen2.5-coder".context_window'].startswith("project:")
    assert config.provenance["models.deepseek-v4-pro.prices.hit"] == "default"
    assert config.provenance["providers.deepseek.base_url"].startswith("user:")
    assert config.provenance["providers.deepseek.api_key_env"] == "default"
    problems = check_credentials(config, KEY_ENV)
    assert len(problems) == 1 and "OTHER_KEY" in problems[0] and "executor uses" in problems[0]


def test_config_is_frozen(dirs: tuple[Path, Path]) -> None:
    write(
        dirs[0] / "reasonix.toml",
        """
        [[mcp.servers]]
        name = "time"
        command = "mcp-server-time"
        args = ["--local-timezone", "UTC"]
        env = { TZ = "UTC" }
        """,
    )
    config = load(dirs)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.executor.model = "x"  # type: ignore[misc]
    server = config.mcp.servers[0]
    assert server["command"] == "mcp-server-time"
    assert server["args"] == ("--local-timezone", "UTC")
    with pytest.raises(TypeError):
        server["name"] = "other"  # type: ignore[index]
    with pytest.raises(TypeError):
        config.providers["x"] = config.providers["deepseek"]  # type: ignore[index]


def test_mcp_servers_with_same_name_replace_whole(dirs: tuple[Path, Path]) -> None:
    project, user = dirs
    write(
        user / "config.toml",
        """
        [[mcp.servers]]
        name = "time"
        command = "old"
        args = ["a"]
        [[mcp.servers]]
        name = "git"
        command = "mcp-server-git"
        """,
    )
    write(
        project / "reasonix.toml",
        """
        [[mcp.servers]]
        name = "time"
        command = "mcp-server-time"
        """,
    )
    config = load(dirs)
    by_name = {s["name"]: s for s in config.mcp.servers}
    assert set(by_name) == {"time", "git"}
    assert dict(by_name["time"]) == {"name": "time", "command": "mcp-server-time"}
    assert config.provenance["mcp.servers.time"].startswith("project:")
    assert config.provenance["mcp.servers.git"].startswith("user:")


def test_render_shows_values_and_sources(dirs: tuple[Path, Path]) -> None:
    project_file = write(
        dirs[0] / "reasonix.toml",
        """
        [executor]
        model = "deepseek-v4-pro"
        """,
    )
    config = load(dirs, overrides={"executor.max_steps": 9})
    lines = render_config(config, {})
    text = "\n".join(lines)
    assert lines[0].startswith("# sources")
    model_line = next(line for line in lines if line.startswith("executor.model ="))
    assert '"deepseek-v4-pro"' in model_line and f"project:{project_file}" in model_line
    steps_line = next(line for line in lines if line.startswith("executor.max_steps ="))
    assert steps_line.endswith("# flag")
    assert "providers.deepseek.api_key = (NOT SET)" in text
    assert "env:DEEPSEEK_API_KEY" in text
    assert "sk-" not in "\n".join(render_config(config, KEY_ENV))
    assert "models.deepseek-v4-pro.context_window = 1048576" in text


# --- errors: file, line, key, what is valid ----------------------------------------------------


def test_bad_enum_value(dirs: tuple[Path, Path]) -> None:
    err = error_of(
        dirs,
        """
        # project settings
        [executor]
        model = "deepseek-v4-flash"

        [permissions]
        allow = [
          "bash(git status*)",
        ]
        mode = "yes"
        """,
    )
    message = str(err)
    assert err.file is not None and err.file.endswith("reasonix.toml")
    assert err.line == 9
    assert err.key == "permissions.mode"
    assert 'reasonix.toml:9 [permissions.mode]: "yes" is not a valid mode' in message
    assert "use one of ask, auto-edit, auto, plan, yolo" in message


@pytest.mark.parametrize(
    ("text", "line", "key", "fragment"),
    [
        ('[planner]\ngate = "sometimes"\n', 2, "planner.gate", "auto, explicit, always, off"),
        ('[executor]\neffort = "hgih"\n', 2, "executor.effort", 'did you mean "high"'),
        ("[executor]\nmax_steps = 0\n", 2, "executor.max_steps", "at least 1"),
        ('[executor]\nmax_steps = "50"\n', 2, "executor.max_steps", "expected an integer"),
        ("[planner]\nenabled = 1\n", 2, "planner.enabled", "expected true or false"),
        ('[permissions]\nallow = "bash(*)"\n', 2, "permissions.allow", "array of strings"),
        ("[compaction]\nthreshold = 1.5\n", 2, "compaction.threshold", "at most 1"),
        ('# c\n[executor]\nmodle = "x"\n', 3, "executor.modle", 'did you mean "model"'),
        ("[permission]\nmode = 'ask'\n", 1, "permission", 'did you mean "permissions"'),
        ('executor.provder = "deepseek"\n', 1, "executor.provder", 'did you mean "provider"'),
        (
            '[[providers]]\nname = "a"\nbase_url = "x"\n[[providers]]\nname = "b"\nkind = "grpc"\n',
            6,
            "providers[1].kind",
            "use one of openai",
        ),
        ('[[providers]]\nbase_url = "x"\n', 1, "providers[0]", 'missing required key "name"'),
        (
            '[[providers]]\nname = "a"\nbase_url = "x"\n[[providers]]\nname = "a"\n',
            5,
            "providers[1].name",
            "duplicate",
        ),
        (
            '[models."m"]\nprices = { hit = 1, miss = "cheap", output = 2 }\n',
            2,
            "models.m.prices.miss",
            "expected a number",
        ),
        (
            '[[mcp.servers]]\nname = "t"\ncommand = "x"\nargz = ["a"]\n',
            4,
            "mcp.servers[0].argz",
            'did you mean "args"',
        ),
    ],
)
def test_validation_errors_point_at_file_line_key(
    dirs: tuple[Path, Path], text: str, line: int, key: str, fragment: str
) -> None:
    err = error_of(dirs, text)
    assert err.file == str(dirs[0] / "reasonix.toml")
    assert err.line == line, str(err)
    assert err.key == key, str(err)
    assert fragment in str(err)
    assert f"reasonix.toml:{line} [{key}]" in str(err)


def test_malformed_toml_uses_tomllib_line(dirs: tuple[Path, Path]) -> None:
    err = error_of(dirs, '[executor]\nmodel = "a"\nmax_steps = = 3\n', where="user")
    assert err.file == str(dirs[1] / "config.toml")
    assert err.line == 3
    assert err.key == "executor.max_steps"
    assert "invalid TOML" in str(err)
    assert "config.toml:3" in str(err)


def test_unknown_provider_reported_where_it_was_written(dirs: tuple[Path, Path]) -> None:
    err = error_of(dirs, '[planner]\ngate = "auto"\nprovider = "deepsek"\n', where="user")
    assert err.file == str(dirs[1] / "config.toml")
    assert err.line == 3
    assert err.key == "planner.provider"
    assert 'no provider named "deepsek"' in str(err)
    assert 'did you mean "deepseek"' in str(err)


def test_unknown_model_needs_a_models_table(dirs: tuple[Path, Path]) -> None:
    err = error_of(dirs, '# a\n# b\n[executor]\nmodel = "gpt-x"\n')
    assert (err.line, err.key) == (4, "executor.model")
    assert '[models."gpt-x"]' in str(err)
    assert "deepseek-v4-flash" in str(err)  # lists what would be valid


def test_unknown_model_from_flag(dirs: tuple[Path, Path]) -> None:
    with pytest.raises(ConfigError) as info:
        load(dirs, overrides={"planner.model": "deepseek-v4-prp"})
    assert info.value.key == "planner.model"
    assert info.value.file is None
    assert 'did you mean "deepseek-v4-pro"' in str(info.value)


def test_disabled_planner_is_not_checked(dirs: tuple[Path, Path]) -> None:
    write(dirs[0] / "reasonix.toml", '[planner]\nenabled = false\nmodel = "nothing"\n')
    assert load(dirs).planner.enabled is False


def test_new_provider_needs_base_url(dirs: tuple[Path, Path]) -> None:
    err = error_of(dirs, '[[providers]]\nname = "x"\napi_key_env = "X_KEY"\n')
    assert err.line == 1
    assert "base_url" in str(err)


def test_prices_for_unknown_model_must_be_complete(dirs: tuple[Path, Path]) -> None:
    err = error_of(dirs, '[models."m"]\ncontext_window = 1000\nprices = { hit = 1 }\n')
    assert err.line == 3
    assert "missing miss, output" in str(err)


def test_unknown_model_without_prices_is_refused(dirs: tuple[Path, Path]) -> None:
    err = error_of(dirs, '[models."local"]\ncontext_window = 1000\n')
    assert err.line == 2
    assert err.key == "models.local.context_window"
    assert "needs prices" in str(err)
    assert "all 0 for a free local model" in str(err)
    # a preset model may override other keys without restating its prices
    write(dirs[0] / "reasonix.toml", '[models."deepseek-v4-pro"]\ncontext_window = 5000\n')
    assert load(dirs).model_info("deepseek-v4-pro").prices.miss > 0


def test_not_utf8(dirs: tuple[Path, Path]) -> None:
    (dirs[0] / "reasonix.toml").write_bytes(b"[executor]\nmodel = '\xff'\n")
    with pytest.raises(ConfigError, match="UTF-8"):
        load(dirs)


# --- the line locator ----------------------------------------------------------------------------


def test_locator_handles_quotes_arrays_and_multiline_values() -> None:
    text = textwrap.dedent(
        """
        [[providers]]
        name = "a"
        [[providers]]
        name = "b"
        [providers.headers]
        X = "1"
        [models."a.b"]
        notes = '''
        [permissions]
        mode = "fake"
        '''
        [permissions]
        allow = [
          "[x]",
        ]
        mode = "ask"
        """
    ).lstrip("\n")
    assert locate(text, ("providers", 1, "name")) == 4
    assert locate(text, ("providers", 1, "headers", "X")) == 6
    assert locate(text, ("models", "a.b", "notes")) == 8
    assert locate(text, ("permissions", "mode")) == 16
    assert locate(text, ("permissions", "deny")) == 12  # falls back to the table header
    assert locate(text, ("nothing",)) is None


def test_mcp_server_timeouts_flow_from_toml_to_the_mcp_layer(tmp_path: Path) -> None:
    from reasonix.app.assembly import mcp_entries
    from reasonix.mcp import servers_from_toml

    (tmp_path / "reasonix.toml").write_text(
        '[[mcp.servers]]\nname = "time"\ncommand = "mcp-server-time"\n'
        'args = ["--local-timezone", "UTC"]\nstartup_timeout = 3.5\ncall_timeout = 7\n'
    )
    config = load_config(tmp_path, environ={}, user_config=tmp_path / "none.toml")
    (server,) = servers_from_toml(mcp_entries(config), "reasonix.toml", environ={})
    assert server.startup_timeout == 3.5
    assert server.call_timeout == 7
    assert list(server.args) == ["--local-timezone", "UTC"]


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
