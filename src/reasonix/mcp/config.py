"""Configuration of MCP servers: the ``[[mcp.servers]]`` TOML table and the ``.mcp.json`` format.

Both sources produce :class:`McpServerConfig` records. ``${VAR}`` (and ``${VAR:-default}``)
references in ``command``, ``args``, ``env``, ``cwd``, ``url`` and ``headers`` are expanded from the
environment when the configuration is read; a reference to a variable that is not set is a
:class:`~reasonix.errors.ConfigError` naming the variable, the file and the key. A bare ``$VAR``
is left alone so arguments such as ``$1`` or ``$HOME``-in-a-regex survive.

This module is plain data and parsing: it never imports the MCP SDK.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from reasonix.errors import ConfigError

DEFAULT_STARTUP_TIMEOUT = 10.0
DEFAULT_CALL_TIMEOUT = 60.0

Transport = Literal["stdio", "http"]

_VAR_RE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")

# Keys accepted in a [[mcp.servers]] entry; anything else is a typo worth reporting.
_TOML_KEYS = frozenset(
    {
        "name",
        "type",
        "command",
        "args",
        "env",
        "cwd",
        "url",
        "headers",
        "startup_timeout",
        "call_timeout",
        "enabled",
    }
)
_HTTP_TYPES = frozenset({"http", "streamable-http", "streamable_http", "streamableHttp"})


@dataclass(frozen=True, slots=True)
class McpServerConfig:
    """One MCP server: either a local command spoken to over stdio, or a streamable HTTP ``url``.

    ``env`` is added to (not substituted for) the inherited environment, less ``withheld_env``
    (names the host keeps from servers, e.g. its own API-key variables; ``env`` may still set
    them explicitly). ``startup_timeout``
    bounds the spawn + ``initialize`` + ``tools/list`` handshake; ``call_timeout`` bounds each
    ``tools/call``. ``source`` names where the entry came from, for error messages.
    """

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    startup_timeout: float = DEFAULT_STARTUP_TIMEOUT
    call_timeout: float = DEFAULT_CALL_TIMEOUT
    enabled: bool = True
    source: str = ""
    withheld_env: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.name or not self.name.strip():
            raise ConfigError("an MCP server needs a non-empty name", file=self.source or None)
        if (self.command is None) == (self.url is None):
            raise ConfigError(
                f"MCP server {self.name!r} needs exactly one of 'command' (stdio) or 'url' (HTTP)",
                file=self.source or None,
                key=self.name,
            )
        for label, value in (
            ("startup_timeout", self.startup_timeout),
            ("call_timeout", self.call_timeout),
        ):
            if not value > 0:
                raise ConfigError(
                    f"{label} must be a positive number of seconds, got {value!r}",
                    file=self.source or None,
                    key=f"{self.name}.{label}",
                )

    @property
    def transport(self) -> Transport:
        """``stdio`` for a command, ``http`` for a URL."""
        return "stdio" if self.command is not None else "http"

    def describe(self) -> str:
        """A one-line human description: the command line or the URL."""
        if self.command is not None:
            return " ".join([self.command, *self.args])
        return str(self.url)


# ---------------------------------------------------------------------------------------------
# ${VAR} expansion


def expand_vars(value: str, *, where: str, file: str, environ: Mapping[str, str]) -> str:
    """Replace ``${VAR}`` / ``${VAR:-default}`` in ``value`` from ``environ``."""

    def repl(m: re.Match[str]) -> str:
        var, default = m.group(1), m.group(2)
        got = environ.get(var)
        if got is not None and (got != "" or default is None):
            return got
        if default is not None:
            return default
        raise ConfigError(
            f"environment variable {var} is not set (referenced as ${{{var}}}); set it or write "
            f"${{{var}:-default}}",
            file=file,
            key=where,
        )

    return _VAR_RE.sub(repl, value)


# ---------------------------------------------------------------------------------------------
# Typed field readers (each error names the file and the key)


def _str(entry: Mapping[str, Any], key: str, where: str, file: str) -> str | None:
    value = entry.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ConfigError(
            f"must be a string, got {type(value).__name__}", file=file, key=f"{where}.{key}"
        )
    return value


def _str_list(entry: Mapping[str, Any], key: str, where: str, file: str) -> list[str]:
    value = entry.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError("must be a list of strings", file=file, key=f"{where}.{key}")
    return list(value)


def _str_map(entry: Mapping[str, Any], key: str, where: str, file: str) -> dict[str, str]:
    value = entry.get(key, {})
    if not isinstance(value, Mapping):
        raise ConfigError("must be a table of strings", file=file, key=f"{where}.{key}")
    out: dict[str, str] = {}
    for k, v in value.items():
        if not isinstance(v, str | int | float) or isinstance(v, bool):
            raise ConfigError("values must be strings", file=file, key=f"{where}.{key}.{k}")
        out[str(k)] = str(v)
    return out


def _seconds(entry: Mapping[str, Any], key: str, default: float, where: str, file: str) -> float:
    value = entry.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ConfigError(
            f"must be a positive number of seconds, got {value!r}", file=file, key=f"{where}.{key}"
        )
    return float(value)


def _build(
    name: str,
    entry: Mapping[str, Any],
    *,
    where: str,
    file: str,
    environ: Mapping[str, str],
    enabled: bool,
) -> McpServerConfig:
    kind = entry.get("type")
    if kind is not None and not isinstance(kind, str):
        raise ConfigError("must be a string", file=file, key=f"{where}.type")
    command = _str(entry, "command", where, file)
    url = _str(entry, "url", where, file)
    if kind == "sse":
        raise ConfigError(
            "the legacy SSE transport is not supported; use a streamable HTTP endpoint "
            '("type": "http") or a stdio command',
            file=file,
            key=f"{where}.type",
        )
    if kind is not None and kind != "stdio" and kind not in _HTTP_TYPES:
        raise ConfigError(
            f"unknown transport type {kind!r}; use 'stdio' or 'http'",
            file=file,
            key=f"{where}.type",
        )
    if kind == "stdio" and command is None:
        raise ConfigError("a stdio server needs 'command'", file=file, key=where)
    if kind in _HTTP_TYPES and url is None:
        raise ConfigError("an HTTP server needs 'url'", file=file, key=where)
    if command is not None and url is not None:
        raise ConfigError(
            "give either 'command' (stdio) or 'url' (HTTP), not both", file=file, key=where
        )
    if command is None and url is None:
        raise ConfigError(
            "needs 'command' (a stdio server) or 'url' (a streamable HTTP server)",
            file=file,
            key=where,
        )
    if command is not None and not command.strip():
        raise ConfigError("must not be empty", file=file, key=f"{where}.command")

    def x(value: str, key: str) -> str:
        return expand_vars(value, where=f"{where}.{key}", file=file, environ=environ)

    args = _str_list(entry, "args", where, file)
    env = _str_map(entry, "env", where, file)
    headers = _str_map(entry, "headers", where, file)
    cwd = _str(entry, "cwd", where, file)
    return McpServerConfig(
        name=name,
        command=x(command, "command") if command is not None else None,
        args=tuple(x(a, f"args[{i}]") for i, a in enumerate(args)),
        env={k: x(v, f"env.{k}") for k, v in env.items()},
        cwd=x(cwd, "cwd") if cwd is not None else None,
        url=x(url, "url") if url is not None else None,
        headers={k: x(v, f"headers.{k}") for k, v in headers.items()},
        startup_timeout=_seconds(entry, "startup_timeout", DEFAULT_STARTUP_TIMEOUT, where, file),
        call_timeout=_seconds(entry, "call_timeout", DEFAULT_CALL_TIMEOUT, where, file),
        enabled=enabled,
        source=file,
    )


def _check_unique(configs: Sequence[McpServerConfig], file: str, key: str) -> None:
    seen: set[str] = set()
    for c in configs:
        if c.name in seen:
            raise ConfigError(f"two MCP servers are named {c.name!r}", file=file, key=key)
        seen.add(c.name)


# ---------------------------------------------------------------------------------------------
# Public parsers


def servers_from_toml(
    entries: Sequence[Mapping[str, Any]] | None,
    source: str = "reasonix.toml",
    *,
    environ: Mapping[str, str] | None = None,
) -> list[McpServerConfig]:
    """Parse the ``[[mcp.servers]]`` array of tables (already loaded by ``tomllib``).

    Each entry has ``name`` and either ``command`` (+ ``args``, ``env``, ``cwd``) or ``url``
    (+ ``headers``); optional ``startup_timeout``, ``call_timeout``, ``enabled``. Unknown keys are
    errors, so a typo does not silently drop a setting.
    """
    env = os.environ if environ is None else environ
    if entries is None:
        return []
    if not isinstance(entries, list | tuple):
        raise ConfigError(
            "must be an array of tables ([[mcp.servers]])", file=source, key="mcp.servers"
        )
    configs: list[McpServerConfig] = []
    for i, entry in enumerate(entries):
        where = f"mcp.servers[{i}]"
        if not isinstance(entry, Mapping):
            raise ConfigError("must be a table", file=source, key=where)
        unknown = sorted(set(entry) - _TOML_KEYS)
        if unknown:
            raise ConfigError(
                f"unknown key(s) {', '.join(unknown)}; known keys: {', '.join(sorted(_TOML_KEYS))}",
                file=source,
                key=where,
            )
        name = _str(entry, "name", where, source)
        if not name or not name.strip():
            raise ConfigError("needs a non-empty 'name'", file=source, key=f"{where}.name")
        enabled = entry.get("enabled", True)
        if not isinstance(enabled, bool):
            raise ConfigError("must be true or false", file=source, key=f"{where}.enabled")
        configs.append(_build(name, entry, where=where, file=source, environ=env, enabled=enabled))
    _check_unique(configs, source, "mcp.servers")
    return configs


def servers_from_mcp_json(
    path: str | Path,
    *,
    environ: Mapping[str, str] | None = None,
    skipped: list[ConfigError] | None = None,
) -> list[McpServerConfig]:
    """Parse a ``.mcp.json`` file as other agents write it.

    ``{"mcpServers": {"name": {"command": ..., "args": [...], "env": {...}}}}`` for stdio and
    ``{"type": "http", "url": ..., "headers": {...}}`` for streamable HTTP. Keys other agents add
    for their own use are ignored; ``"disabled": true`` (or ``"enabled": false``) turns an entry
    off. A missing file is an empty list. With ``skipped`` given, an entry we cannot use (a
    transport we do not speak, an unset ``${VAR}``) is left out and its error appended there
    instead of raised: the file is shared with other agents and one foreign entry should not
    stop reasonix from starting.
    """
    env = os.environ if environ is None else environ
    p = Path(path)
    file = str(p)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc}", file=file) from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"not valid JSON: {exc.msg}", file=file, line=exc.lineno) from exc
    if not isinstance(data, Mapping) or not isinstance(data.get("mcpServers", {}), Mapping):
        raise ConfigError(
            'expected an object like {"mcpServers": {"name": {...}}}', file=file, key="mcpServers"
        )
    configs: list[McpServerConfig] = []
    for name, entry in data.get("mcpServers", {}).items():
        try:
            configs.append(_json_entry(name, entry, file, env))
        except ConfigError as exc:
            if skipped is None:
                raise
            skipped.append(exc)
    return configs


def _json_entry(name: Any, entry: Any, file: str, env: Mapping[str, str]) -> McpServerConfig:
    where = f"mcpServers.{name}"
    if not isinstance(entry, Mapping):
        raise ConfigError("must be an object", file=file, key=where)
    if not str(name).strip():
        raise ConfigError("a server name must not be empty", file=file, key="mcpServers")
    disabled = entry.get("disabled", False)
    enabled = entry.get("enabled", True)
    if not isinstance(disabled, bool) or not isinstance(enabled, bool):
        raise ConfigError("'disabled'/'enabled' must be true or false", file=file, key=where)
    return _build(
        str(name), entry, where=where, file=file, environ=env, enabled=enabled and not disabled
    )
