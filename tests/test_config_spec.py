"""Each configuration key is declared once, in the schema dataclasses: validation, defaults,
provenance, flag coercion and `reasonix config --keys` all derive from them."""

from __future__ import annotations

import dataclasses
import json
import tomllib
from pathlib import Path
from typing import Any

import pytest

from reasonix.config import Config, describe_keys, load_config, render_config
from reasonix.config.spec import ArrayOf, config_spec, section_of, sections
from reasonix.errors import ConfigError
from reasonix.mcp.config import configured_servers
from tests.support.cli import cli_env, run_cli

ENV = {"DEEPSEEK_API_KEY": "sk-test"}


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict) or hasattr(value, "items"):
        pairs = (f"{json.dumps(k)} = {_toml_value(v)}" for k, v in value.items())
        return "{" + ", ".join(pairs) + "}"
    return repr(value)


def test_every_declared_key_is_accepted_and_round_trips_its_default(tmp_path: Path) -> None:
    # Writing every key of every section at its declared default must load and change nothing:
    # the loader knows exactly the keys the dataclasses declare (a field added to a section
    # without loader support would fail here).
    defaults = Config()
    lines = []
    for name in sections():
        lines.append(f"[{name}]")
        section = getattr(defaults, name)
        for key, sub in section_of(name).fields.items():
            if not isinstance(sub, ArrayOf):
                lines.append(f"{key} = {_toml_value(getattr(section, key))}")
    (tmp_path / "config.toml").write_text("\n".join(lines) + "\n")
    text = (tmp_path / "config.toml").read_text()
    tomllib.loads(text)  # the test's own TOML is well formed
    config = load_config(tmp_path / "p", environ=ENV, user_config=tmp_path / "config.toml")
    for name in sections():
        assert getattr(config, name) == getattr(defaults, name), name
        for key, sub in section_of(name).fields.items():
            if isinstance(sub, ArrayOf):
                continue
            assert config.provenance[f"{name}.{key}"].startswith("user:"), key


def test_sections_are_the_config_dataclasses() -> None:
    spec = config_spec()
    declared = {
        f.metadata.get("toml", f.name)
        for f in dataclasses.fields(Config)
        if f.metadata.get("config", True)
    }
    assert set(spec.fields) == declared
    # the MCP server entry's keys are the record's fields (type included, program-set ones not)
    servers = section_of("mcp").fields["servers"]
    assert isinstance(servers, ArrayOf)
    assert "type" in servers.item.fields
    assert "withheld_env" not in servers.item.fields and "source" not in servers.item.fields


def test_http_mcp_server_entry_loads_and_reaches_the_mcp_layer(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text(
        '[mcp]\nexpand_env = ["REMOTE_TOKEN"]\n'
        '[[mcp.servers]]\nname = "remote"\ntype = "http"\nurl = "http://127.0.0.1:9/mcp"\n'
        'headers = { Authorization = "Bearer ${REMOTE_TOKEN}" }\ncall_timeout = 5\n'
    )
    env = {**ENV, "REMOTE_TOKEN": "tok"}
    config = load_config(tmp_path / "p", environ=env, user_config=tmp_path / "config.toml")
    (server,) = configured_servers(config, tmp_path / "p", env)
    assert server.transport == "http"
    assert server.url == "http://127.0.0.1:9/mcp"
    assert dict(server.headers) == {"Authorization": "Bearer tok"}
    assert server.call_timeout == 5.0
    assert any(line.startswith("mcp.servers.remote = ") for line in render_config(config, env))


def test_a_wrong_key_in_an_mcp_entry_still_names_file_line_and_valid_keys(tmp_path: Path) -> None:
    (tmp_path / "reasonix.toml").write_text(
        '[[mcp.servers]]\nname = "t"\ntype = "http"\nurl = "http://x"\nheader = {}\n'
    )
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path, environ=ENV, user_config=tmp_path / "none.toml")
    err = info.value
    assert (err.line, err.key) == (5, "mcp.servers[0].header")
    assert 'did you mean "headers"' in str(err)
    assert "type" in str(err)  # the valid keys are listed, the declared `type` among them


def test_user_only_keys_are_ignored_from_a_project_file(tmp_path: Path) -> None:
    (tmp_path / "reasonix.toml").write_text(
        '[trust]\nfolders = ["/"]\n[mcp]\nexpand_env = ["DEEPSEEK_API_KEY"]\n'
    )
    config = load_config(tmp_path, environ=ENV, user_config=tmp_path / "none.toml")
    assert config.trust.folders == ()
    assert config.mcp.expand_env == ()
    assert any("trust.folders" in item for item in config.ignored)


def test_describe_keys_lists_types_defaults_and_who_may_set_them() -> None:
    text = "\n".join(describe_keys())
    assert "permissions.mode  ask | auto-edit | auto | plan | yolo  (default 'ask')" in text
    assert "permissions.deny  array of strings" in text and "[a project may only add]" in text
    assert "budget.max_session_usd  number, >= 0" in text
    assert "[a project may only lower]" in text
    assert "mcp.servers[].type" in text
    assert "trust.folders" in text and "[user config only]" in text
    assert 'models."NAME".prices.hit  number, >= 0' in text


@pytest.mark.slow
def test_config_keys_command(tmp_path: Path) -> None:
    env = cli_env(tmp_path / "data", tmp_path, key=None)
    proc = run_cli(["config", "--keys"], cwd=tmp_path, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == describe_keys()
