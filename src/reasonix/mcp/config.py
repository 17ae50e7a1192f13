"""Configuration of MCP servers: the ``[[mcp.servers]]`` TOML table and the ``.mcp.json`` format.

Both sources produce :class:`McpServerConfig` records. ``${VAR}`` (and ``${VAR:-default}``)
references in ``command``, ``args``, ``env``, ``cwd``, ``url`` and ``headers`` are expanded from the
environment when the configuration is read; a reference to a variable that is not set is a
:class:`~reasonix.errors.ConfigError` naming the variable, the file and the key. A bare ``$VAR``
is left alone so arguments such as ``$1`` or ``$HOME``-in-a-regex survive.

This module is plain data and parsing: it never imports the MCP SDK.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from reasonix.config.schema import (
    DEFAULT_CALL_TIMEOUT,
    DEFAULT_STARTUP_TIMEOUT,
    MCP_TRANSPORT_TYPES,
    Config,
    McpServerConfig,
)
from reasonix.config.spec import config_keys, display
from reasonix.errors import ConfigError

__all__ = [
    "DEFAULT_CALL_TIMEOUT",
    "DEFAULT_STARTUP_TIMEOUT",
    "McpServerConfig",
    "Transport",
    "configured_servers",
    "expand_vars",
    "servers_from_mcp_json",
    "servers_from_toml",
]

Transport = Literal["stdio", "http"]

_VAR_RE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")

# Keys accepted in a [[mcp.servers]] entry (declared once, by the dataclass); anything else is a
# typo worth reporting.
_TOML_KEYS = frozenset(config_keys(McpServerConfig))
_HTTP_TYPES = frozenset(t for t in MCP_TRANSPORT_TYPES if t not in ("stdio", "sse"))


# ---------------------------------------------------------------------------------------------
# ${VAR} expansion


VarFilter = Callable[[str], bool]


def expand_vars(
    value: str,
    *,
    where: str,
    file: str,
    environ: Mapping[str, str],
    allowed: VarFilter | None = None,
) -> str:
    """Replace ``${VAR}`` / ``${VAR:-default}`` in ``value`` from ``environ``; with ``allowed``,
    a variable it refuses is an error naming the setting that would allow it."""

    def repl(m: re.Match[str]) -> str:
        var, default = m.group(1), m.group(2)
        if allowed is not None and not allowed(var):
            raise ConfigError(
                f"${{{var}}} may not be read here: an MCP entry expands only variables you "
                f'allow; add "{var}" to [mcp] expand_env in your own config.toml',
                file=file,
                key=where,
            )
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
    allowed: VarFilter | None = None,
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
        return expand_vars(
            value, where=f"{where}.{key}", file=file, environ=environ, allowed=allowed
        )

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
        type=kind,
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
    allowed: VarFilter | None = None,
) -> list[McpServerConfig]:
    """Parse the ``[[mcp.servers]]`` array of tables (already loaded by ``tomllib``).

    Each entry has ``name`` and either ``command`` (+ ``args``, ``env``, ``cwd``) or ``url``
    (+ ``headers``); optional ``type``, ``startup_timeout``, ``call_timeout``, ``enabled``.
    Unknown keys are errors, so a typo does not silently drop a setting. ``allowed`` limits which
    variables ``${VAR}`` may read (default: any in ``environ``).
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
        built = _build(
            name, entry, where=where, file=source, environ=env, enabled=enabled, allowed=allowed
        )
        # Only the TOML entries can say so; the loader keeps a project's from reaching here.
        trusted = entry.get("trust_annotations", False) is True
        configs.append(dataclasses.replace(built, trust_annotations=trusted))
    _check_unique(configs, source, "mcp.servers")
    return configs


def servers_from_mcp_json(
    path: str | Path,
    *,
    environ: Mapping[str, str] | None = None,
    skipped: list[ConfigError] | None = None,
    allowed: VarFilter | None = None,
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
    from reasonix.config.loader import read_config_file

    raw = read_config_file(p)
    if raw is None:
        return []
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError("the file is not valid UTF-8; save it as UTF-8", file=file) from exc
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
            configs.append(_json_entry(name, entry, file, env, allowed))
        except ConfigError as exc:
            if skipped is None:
                raise
            skipped.append(exc)
    return configs


def _json_entry(
    name: Any, entry: Any, file: str, env: Mapping[str, str], allowed: VarFilter | None
) -> McpServerConfig:
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
        str(name),
        entry,
        where=where,
        file=file,
        environ=env,
        enabled=enabled and not disabled,
        allowed=allowed,
    )


def configured_servers(
    config: Config,
    workspace: Path,
    environ: Mapping[str, str] | None = None,
    skipped: list[ConfigError] | None = None,
) -> list[McpServerConfig]:
    """Every MCP server the effective configuration allows: ``[[mcp.servers]]`` (an untrusted
    project's were already left out by the loader), then the entries of the project's
    ``.mcp.json`` when the folder is trusted. A name defined in both keeps the TOML definition.

    ``${VAR}``: an entry from the user's own config may read any variable except our
    providers' key variables; a project entry only the variables the user listed in
    ``[mcp] expand_env`` (which also lifts the key-variable rule). An unusable ``.mcp.json``
    entry is reported through ``skipped`` (when given) instead of stopping start-up. Servers
    get the allowlisted environment plus the user's ``[environment]`` settings, never our
    key variables. Imports nothing of the MCP SDK."""
    env = os.environ if environ is None else environ
    key_vars = {p.api_key_env for p in config.providers.values() if p.api_key_env}
    listed = set(config.mcp.expand_env)

    def user_may(var: str) -> bool:
        return var in listed or var not in key_vars

    def project_may(var: str) -> bool:
        return var in listed

    groups: dict[str, list[dict[str, Any]]] = {}
    for entry in config.mcp.servers:
        origin = config.provenance.get(f"mcp.servers.{display((str(entry['name']),))}", "")
        groups.setdefault(origin, []).append(_thaw(entry))
    servers: list[McpServerConfig] = []
    for origin, entries in groups.items():
        kind, _, path = origin.partition(":")
        allowed = project_may if kind == "project" else user_may
        servers += servers_from_toml(entries, path or "reasonix.toml", environ=env, allowed=allowed)
    if config.trusted:
        names = {s.name for s in servers}
        project = servers_from_mcp_json(
            workspace / ".mcp.json", environ=env, skipped=skipped, allowed=project_may
        )
        servers += [s for s in project if s.name not in names]
    withheld = tuple(sorted(key_vars))
    include = tuple(config.environment.include)
    extra = dict(config.environment.set)
    return [
        replace(s, withheld_env=withheld, pass_env=include, env={**extra, **s.env}) for s in servers
    ]


def _thaw(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _thaw(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [_thaw(v) for v in value]
    return value
