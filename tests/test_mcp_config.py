"""MCP configuration parsing and the pure conversions (names, schemas, results): no servers."""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from reasonix.errors import ConfigError
from reasonix.mcp import (
    McpServerConfig,
    normalize_schema,
    result_to_tool_result,
    servers_from_mcp_json,
    servers_from_toml,
    tool_name,
)
from reasonix.mcp.convert import assign_names

ENV = {"HOME": "/home/me", "TOKEN": "s3cret", "EMPTY": ""}


# ---------------------------------------------------------------------------------------------
# [[mcp.servers]] in TOML


def test_toml_stdio_and_http_entries() -> None:
    doc = tomllib.loads(
        """
        [[mcp.servers]]
        name = "time"
        command = "mcp-server-time"
        args = ["--local-timezone", "UTC"]
        env = { TZ_DIR = "${HOME}/tz" }
        cwd = "${HOME}"
        call_timeout = 5

        [[mcp.servers]]
        name = "remote"
        url = "https://example.invalid/mcp"
        headers = { Authorization = "Bearer ${TOKEN}" }
        startup_timeout = 2.5
        enabled = false
        """
    )
    time_cfg, remote = servers_from_toml(doc["mcp"]["servers"], environ=ENV)
    assert time_cfg == McpServerConfig(
        name="time",
        command="mcp-server-time",
        args=("--local-timezone", "UTC"),
        env={"TZ_DIR": "/home/me/tz"},
        cwd="/home/me",
        call_timeout=5.0,
        source="reasonix.toml",
    )
    assert time_cfg.transport == "stdio"
    assert time_cfg.startup_timeout == 10.0
    assert remote.transport == "http"
    assert remote.headers == {"Authorization": "Bearer s3cret"}
    assert remote.startup_timeout == 2.5
    assert remote.call_timeout == 60.0
    assert remote.enabled is False


def test_var_default_syntax_and_bare_dollar_left_alone() -> None:
    (cfg,) = servers_from_toml(
        [{"name": "x", "command": "run", "args": ["${MISSING:-fallback}", "${EMPTY:-d}", "$1"]}],
        environ=ENV,
    )
    assert cfg.args == ("fallback", "d", "$1")


def test_missing_variable_names_the_variable_file_and_key() -> None:
    with pytest.raises(ConfigError) as err:
        servers_from_toml(
            [{"name": "x", "command": "run", "env": {"KEY": "${NOT_SET_ANYWHERE}"}}],
            source="proj/reasonix.toml",
            environ=ENV,
        )
    text = str(err.value)
    assert "NOT_SET_ANYWHERE" in text
    assert "proj/reasonix.toml" in text
    assert err.value.key == "mcp.servers[0].env.KEY"


@pytest.mark.parametrize(
    ("entry", "key_part", "message_part"),
    [
        ({"name": "x", "command": "a", "url": "http://h"}, "mcp.servers[0]", "not both"),
        ({"name": "x"}, "mcp.servers[0]", "needs 'command'"),
        ({"command": "a"}, "mcp.servers[0].name", "name"),
        ({"name": "x", "command": "a", "args": "--flag"}, "mcp.servers[0].args", "list"),
        ({"name": "x", "command": "a", "comand": "b"}, "mcp.servers[0]", "comand"),
        ({"name": "x", "command": "a", "call_timeout": 0}, "call_timeout", "positive"),
        ({"name": "x", "command": "a", "enabled": "yes"}, "enabled", "true or false"),
        ({"name": "x", "type": "sse", "url": "http://h"}, "type", "SSE"),
        ({"name": "x", "type": "http", "command": "a"}, "mcp.servers[0]", "url"),
    ],
)
def test_invalid_toml_entries(entry: dict[str, object], key_part: str, message_part: str) -> None:
    with pytest.raises(ConfigError) as err:
        servers_from_toml([entry], environ=ENV)
    assert err.value.file == "reasonix.toml"
    assert err.value.key is not None and key_part in err.value.key
    assert message_part in str(err.value)


def test_duplicate_names_are_rejected() -> None:
    with pytest.raises(ConfigError, match="two MCP servers are named 'a'"):
        servers_from_toml([{"name": "a", "command": "x"}, {"name": "a", "command": "y"}])


def test_no_servers_table() -> None:
    assert servers_from_toml(None) == []
    assert servers_from_toml([]) == []


# ---------------------------------------------------------------------------------------------
# .mcp.json


def test_mcp_json_stdio_http_and_disabled(tmp_path: Path) -> None:
    path = tmp_path / ".mcp.json"
    path.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "git": {
                        "command": "mcp-server-git",
                        "args": ["--repository", "${HOME}/repo"],
                        "env": {"GIT_TOKEN": "${TOKEN}"},
                        "alwaysAllow": ["git_status"],  # another agent's key: ignored
                    },
                    "web": {
                        "type": "http",
                        "url": "https://example.invalid/mcp",
                        "headers": {"X-Key": "${TOKEN}"},
                    },
                    "off": {"command": "whatever", "disabled": True},
                }
            }
        )
    )
    git, web, off = servers_from_mcp_json(path, environ=ENV)
    assert (git.name, git.command, git.args) == (
        "git",
        "mcp-server-git",
        ("--repository", "/home/me/repo"),
    )
    assert git.env == {"GIT_TOKEN": "s3cret"}
    assert git.source == str(path)
    assert (web.transport, web.url, web.headers) == (
        "http",
        "https://example.invalid/mcp",
        {"X-Key": "s3cret"},
    )
    assert off.enabled is False


def test_mcp_json_errors_name_the_file_and_key(tmp_path: Path) -> None:
    path = tmp_path / ".mcp.json"
    path.write_text('{"mcpServers": {"bad": {"args": ["x"]}}}')
    with pytest.raises(ConfigError) as err:
        servers_from_mcp_json(path)
    assert err.value.file == str(path)
    assert err.value.key == "mcpServers.bad"

    path.write_text('{"mcpServers": {\n  "x": }')
    with pytest.raises(ConfigError, match="not valid JSON") as err2:
        servers_from_mcp_json(path)
    assert err2.value.line == 2

    path.write_text('{"mcpServers": []}')
    with pytest.raises(ConfigError, match="mcpServers"):
        servers_from_mcp_json(path)

    path.write_text('{"mcpServers": {"u": {"command": "${NOPE_NOT_SET}"}}}')
    with pytest.raises(ConfigError, match="NOPE_NOT_SET") as err3:
        servers_from_mcp_json(path, environ=ENV)
    assert err3.value.key == "mcpServers.u.command"


def test_mcp_json_missing_file_is_empty(tmp_path: Path) -> None:
    assert servers_from_mcp_json(tmp_path / "absent.json") == []


# ---------------------------------------------------------------------------------------------
# Tool names

NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def test_tool_names_are_prefixed_and_sanitised() -> None:
    assert tool_name("time", "get_current_time") == "mcp__time__get_current_time"
    assert tool_name("my.server", "do thing/now") == "mcp__my_server__do_thing_now"


def test_long_names_are_cut_with_a_hash_and_stay_unique() -> None:
    a = tool_name("server", "x" * 80 + "a")
    b = tool_name("server", "x" * 80 + "b")
    assert NAME_RE.match(a) and NAME_RE.match(b)
    assert len(a) == 64 and a != b
    assert a == tool_name("server", "x" * 80 + "a")  # deterministic


def test_colliding_sanitised_names_both_get_distinct_suffixes() -> None:
    names = assign_names([("s", "a.b"), ("s", "a_b"), ("s", "c")])
    assert names[("s", "c")] == "mcp__s__c"
    assert names[("s", "a.b")] != names[("s", "a_b")]
    assert all(NAME_RE.match(n) for n in names.values())
    # Independent of the order the pairs come in.
    assert assign_names(reversed(list(names))) == names


# ---------------------------------------------------------------------------------------------
# Schemas


def test_schema_gets_an_object_top_and_drops_annotations() -> None:
    assert normalize_schema(None) == {"properties": {}, "type": "object"}
    assert normalize_schema({}) == {"properties": {}, "type": "object"}
    out = normalize_schema(
        {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "argsModel",
            "properties": {
                "title": {"type": "string", "title": "Title"},  # a property named "title" stays
                "n": {"type": "integer", "default": 3},
            },
            "required": ["title"],
        }
    )
    assert out == {
        "properties": {"n": {"default": 3, "type": "integer"}, "title": {"type": "string"}},
        "required": ["title"],
        "type": "object",
    }
    assert list(out) == sorted(out)


def test_local_refs_are_inlined_and_recursion_is_cut() -> None:
    schema = {
        "type": "object",
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {"value": {"type": "string"}, "child": {"$ref": "#/$defs/Node"}},
            },
            "Kind": {"enum": ["a", "b"], "type": "string"},
        },
        "definitions": {"Legacy": {"type": "number"}},
        "properties": {
            "root": {"$ref": "#/$defs/Node", "description": "the tree"},
            "kind": {"anyOf": [{"$ref": "#/$defs/Kind"}, {"type": "null"}]},
            "old": {"$ref": "#/definitions/Legacy"},
            "remote": {"$ref": "https://example.invalid/schema.json"},
        },
    }
    out = normalize_schema(schema)
    props = out["properties"]
    assert "$defs" not in out and "definitions" not in out
    assert props["root"]["description"] == "the tree"
    assert props["root"]["properties"]["value"] == {"type": "string"}
    # The recursive reference inside Node becomes unconstrained instead of expanding forever.
    assert props["root"]["properties"]["child"] == {}
    assert props["kind"]["anyOf"][0] == {"enum": ["a", "b"], "type": "string"}
    assert props["old"] == {"type": "number"}
    assert props["remote"] == {}
    assert "$ref" not in json.dumps(out)
    assert json.dumps(normalize_schema(schema)) == json.dumps(out)  # deterministic bytes


# ---------------------------------------------------------------------------------------------
# Results


def test_result_maps_every_content_kind() -> None:
    png = base64.b64encode(b"\x89PNG" + b"\x00" * 96).decode()
    result = result_to_tool_result(
        {
            "content": [
                {"type": "text", "text": "first"},
                {"type": "image", "data": png, "mimeType": "image/png"},
                {
                    "type": "audio",
                    "data": base64.b64encode(b"abc").decode(),
                    "mimeType": "audio/wav",
                },
                {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "inline text"}},
                {"type": "resource", "resource": {"uri": "file:///b.bin", "blob": "AAECAw=="}},
                {"type": "resource_link", "uri": "file:///c.log", "name": "c.log"},
            ]
        }
    )
    assert not result.is_error
    assert result.content.split("\n\n") == [
        "first",
        "[image: image/png, 100 bytes]",
        "[audio: audio/wav, 3 bytes]",
        "[resource: file:///a.txt]\ninline text",
        "[resource: file:///b.bin, application/octet-stream, 4 bytes]",
        "[resource link: c.log <file:///c.log>]",
    ]


def test_structured_content_is_appended_only_when_it_adds_information() -> None:
    same = {"a": 1, "b": [2]}
    echoed = result_to_tool_result(
        {
            "content": [{"type": "text", "text": json.dumps(same, indent=2)}],
            "structuredContent": same,
        }
    )
    assert echoed.content == json.dumps(same, indent=2)
    wrapped = result_to_tool_result(
        {"content": [{"type": "text", "text": "HI"}], "structuredContent": {"result": "HI"}}
    )
    assert wrapped.content == "HI"
    extra = result_to_tool_result(
        {"content": [{"type": "text", "text": "3 files"}], "structuredContent": {"count": 3}}
    )
    assert extra.content == '3 files\n\n{"count": 3}'
    only = result_to_tool_result({"content": [], "structuredContent": {"ok": True}})
    assert only.content == '{"ok": true}'


def test_is_error_and_empty_results() -> None:
    err = result_to_tool_result({"content": [{"type": "text", "text": "bad"}], "isError": True})
    assert err.is_error and err.content == "bad"
    assert result_to_tool_result({"content": []}).content == "(no output)"


# ---------------------------------------------------------------------------------------------
# Import cost


@pytest.mark.slow
def test_importing_reasonix_mcp_does_not_import_the_sdk() -> None:
    code = (
        "import sys, reasonix.mcp, reasonix.mcp.manager, reasonix.mcp.transport\n"
        "bad = [m for m in sys.modules if m == 'mcp' or m.startswith(('mcp.', 'mcp_types'))]\n"
        "print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
