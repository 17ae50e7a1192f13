"""Load, validate and merge configuration; explain where every value came from.

Precedence, lowest to highest: built-in defaults, the user's ``config.toml`` (in
``platformdirs.user_config_dir("reasonix")`` or ``$REASONIX_CONFIG_DIR``), the project's
``reasonix.toml``, then overrides (command-line flags, dotted keys such as ``executor.model``).

Every layer is validated on its own, so an error names the file, the line and the key that is
wrong and says what would be valid. Cross-references (a role naming a provider or a model) are
checked after merging and reported at the place the offending value was written.

Merging: plain tables merge key by key; ``[[providers]]`` entries merge by ``name`` key by key (a
project can change only ``base_url`` of ``deepseek``); ``[models."name"]`` tables merge key by
key over the presets; ``[[mcp.servers]]`` entries with the same ``name`` replace each other whole.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, cast

from reasonix.config._locate import PathPart, locate, scan
from reasonix.config.schema import (
    EFFORTS,
    GATES,
    PERMISSION_MODES,
    PROVIDER_KINDS,
    BudgetConfig,
    CompactionConfig,
    Config,
    ExecutorConfig,
    McpConfig,
    PermissionsConfig,
    PlannerConfig,
    ProviderConfig,
    RoleConfig,
    WorkspaceConfig,
)
from reasonix.errors import ConfigError
from reasonix.providers.models import (
    DEFAULT_EXECUTOR_MODEL,
    DEFAULT_PLANNER_MODEL,
    PRESETS,
    ModelInfo,
)

PROJECT_FILE = "reasonix.toml"
USER_FILE = "config.toml"
CONFIG_DIR_ENV = "REASONIX_CONFIG_DIR"
DEEPSEEK_KEY_ENV = "DEEPSEEK_API_KEY"

# ---------------------------------------------------------------------------------------------
# Schema as data: one walker validates every layer against it.


# Plain classes rather than dataclasses: each dataclass costs about a millisecond to create at
# import time, and config loads on every interactive start.


class _Scalar:
    __slots__ = ("choices", "kind", "maximum", "minimum", "what")

    def __init__(
        self,
        kind: str,  # str | int | float | bool
        choices: tuple[str, ...] = (),
        what: str = "",  # noun for enum errors: "mode", "gate", ...
        minimum: float | None = None,
        maximum: float | None = None,
    ) -> None:
        self.kind, self.choices, self.what = kind, choices, what
        self.minimum, self.maximum = minimum, maximum


class _StrList:
    __slots__ = ()


class _FreeTable:
    """A table with arbitrary keys; ``strings`` requires every value to be a string."""

    __slots__ = ("strings",)

    def __init__(self, strings: bool = False) -> None:
        self.strings = strings


class _Table:
    __slots__ = ("fields", "required")

    def __init__(self, fields: Mapping[str, _Spec], required: tuple[str, ...] = ()) -> None:
        self.fields, self.required = fields, required


class _MapOf:
    """A table whose keys are names chosen by the user (``[models."x"]``)."""

    __slots__ = ("value",)

    def __init__(self, value: _Table) -> None:
        self.value = value


class _ArrayOf:
    """An array of tables (``[[providers]]``) keyed by a unique ``name``."""

    __slots__ = ("item",)

    def __init__(self, item: _Table) -> None:
        self.item = item


_Spec = _Scalar | _StrList | _FreeTable | _Table | _MapOf | _ArrayOf

_STR = _Scalar("str")
_BOOL = _Scalar("bool")
_PRICE = _Scalar("float", minimum=0)


def _int(minimum: int) -> _Scalar:
    return _Scalar("int", minimum=minimum)


_ROLE_FIELDS: dict[str, _Spec] = {
    "provider": _STR,
    "model": _STR,
    "effort": _Scalar("str", EFFORTS, "effort"),
}

SCHEMA = _Table(
    {
        "executor": _Table({**_ROLE_FIELDS, "max_steps": _int(1)}),
        "planner": _Table(
            {
                "enabled": _BOOL,
                **_ROLE_FIELDS,
                "gate": _Scalar("str", GATES, "gate"),
                "max_replans": _int(0),
                "stall_rounds": _int(1),
                "gate_threshold": _int(1),
            }
        ),
        "providers": _ArrayOf(
            _Table(
                {
                    "name": _STR,
                    "kind": _Scalar("str", PROVIDER_KINDS, "provider kind"),
                    "base_url": _STR,
                    "api_key_env": _STR,
                    "headers": _FreeTable(strings=True),
                    "extra_body": _FreeTable(),
                },
                required=("name",),
            )
        ),
        "models": _MapOf(
            _Table(
                {
                    "context_window": _int(1),
                    "max_output": _int(1),
                    "supports_thinking": _BOOL,
                    "prices": _Table(
                        {
                            "hit": _PRICE,
                            "miss": _PRICE,
                            "output": _PRICE,
                            "peak_multiplier": _Scalar("float", minimum=0),
                        }
                    ),
                }
            )
        ),
        "permissions": _Table(
            {
                "mode": _Scalar("str", PERMISSION_MODES, "mode"),
                "allow": _StrList(),
                "ask": _StrList(),
                "deny": _StrList(),
            }
        ),
        "workspace": _Table({"roots": _StrList(), "read_deny": _StrList()}),
        "compaction": _Table(
            {
                "threshold": _Scalar("float", minimum=0.01, maximum=1.0),
                "keep_recent_turns": _int(0),
            }
        ),
        "budget": _Table({"max_session_usd": _Scalar("float", minimum=0)}),
        "mcp": _Table(
            {
                "servers": _ArrayOf(
                    _Table(
                        {
                            "name": _STR,
                            "command": _STR,
                            "args": _StrList(),
                            "env": _FreeTable(strings=True),
                            "cwd": _STR,
                            "url": _STR,
                            "headers": _FreeTable(strings=True),
                            "enabled": _BOOL,
                            "startup_timeout": _Scalar("float", minimum=0),
                            "call_timeout": _Scalar("float", minimum=0),
                        },
                        required=("name",),
                    )
                )
            }
        ),
    }
)

_MODEL_KEYS = (
    "context_window",
    "max_output",
    "supports_thinking",
    "prices.hit",
    "prices.miss",
    "prices.output",
    "prices.peak_multiplier",
)

#: Tables whose keys merge one by one and may be set by flags.
_PLAIN_TABLES = ("executor", "planner", "permissions", "workspace", "compaction", "budget")

# ---------------------------------------------------------------------------------------------
# Layers


class _Layer:
    """One source of configuration: its provenance label, file and parsed data."""

    __slots__ = ("data", "label", "path", "text")

    def __init__(
        self, label: str, data: dict[str, Any], path: Path | None = None, text: str | None = None
    ) -> None:
        self.label, self.data, self.path, self.text = label, data, path, text

    def error(self, key: tuple[PathPart, ...], message: str) -> ConfigError:
        line = locate(self.text, key) if self.text is not None else None
        if self.label == "flag":
            message += " (from a command-line flag)"
        return ConfigError(
            message,
            file=str(self.path) if self.path else None,
            line=line,
            key=_display(key),
        )


def _display(key: tuple[PathPart, ...]) -> str:
    """``permissions.mode``, ``models."my.model".prices``, ``providers[1].base_url``."""
    out = ""
    for part in key:
        if isinstance(part, int):
            out += f"[{part}]"
            continue
        text = part if re.fullmatch(r"[A-Za-z0-9_-]+", part) else json.dumps(part)
        out += ("." if out else "") + text
    return out


def _k(name: str) -> str:
    """A name as one segment of a dotted provenance key (quoted unless bare)."""
    return _display((name,))


def _freeze(value: Any) -> Any:
    """Lists become tuples and tables read-only mappings, so a Config cannot be mutated."""
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, dict):
        return MappingProxyType({k: _freeze(v) for k, v in value.items()})
    return value


def _suggest(word: str, options: list[str] | tuple[str, ...]) -> str:
    import difflib  # only needed on the error path

    close = difflib.get_close_matches(word, list(options), n=1, cutoff=0.6)
    return f'; did you mean "{close[0]}"?' if close else ""


def _type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    return type(value).__name__


_KIND_NOUN = {"str": "a string", "int": "an integer", "float": "a number", "bool": "true or false"}


def _validate(value: Any, spec: _Spec, key: tuple[PathPart, ...], layer: _Layer) -> None:
    """Raise ConfigError at the first problem in ``value`` against ``spec``."""
    got = f"got {_type_name(value)} ({json.dumps(value, default=str)[:60]})"
    if isinstance(spec, _Scalar):
        ok = {
            "str": isinstance(value, str),
            "int": isinstance(value, int) and not isinstance(value, bool),
            "float": isinstance(value, int | float) and not isinstance(value, bool),
            "bool": isinstance(value, bool),
        }[spec.kind]
        if not ok:
            raise layer.error(key, f"expected {_KIND_NOUN[spec.kind]}, {got}")
        if spec.choices and value not in spec.choices:
            raise layer.error(
                key,
                f'"{value}" is not a valid {spec.what}; use one of {", ".join(spec.choices)}'
                + _suggest(str(value), spec.choices),
            )
        if spec.minimum is not None and value < spec.minimum:
            raise layer.error(key, f"must be at least {spec.minimum:g}, got {value}")
        if spec.maximum is not None and value > spec.maximum:
            raise layer.error(key, f"must be at most {spec.maximum:g}, got {value}")
    elif isinstance(spec, _StrList):
        if not isinstance(value, list):
            raise layer.error(key, f"expected an array of strings, {got}")
        for i, item in enumerate(value):
            if not isinstance(item, str):
                raise layer.error(key, f"item {i + 1} should be a string, got {_type_name(item)}")
    elif isinstance(spec, _FreeTable):
        if not isinstance(value, dict):
            raise layer.error(key, f"expected a table, {got}")
        if spec.strings:
            for name, item in value.items():
                if not isinstance(item, str):
                    raise layer.error((*key, name), f"expected a string, got {_type_name(item)}")
    elif isinstance(spec, _Table):
        if not isinstance(value, dict):
            raise layer.error(key, f"expected a table, {got}")
        for name, item in value.items():
            sub = spec.fields.get(name)
            if sub is None:
                where = f"in [{_display(key)}]" if key else "at the top level"
                noun = "table" if isinstance(item, dict | list) and not key else "key"
                hint = _suggest(name, list(spec.fields)) or ";"
                raise layer.error(
                    (*key, name),
                    f'unknown {noun} "{name}" {where}{hint} valid: {", ".join(spec.fields)}',
                )
            _validate(item, sub, (*key, name), layer)
        for name in spec.required:
            if name not in value:
                raise layer.error(key, f'missing required key "{name}"')
    elif isinstance(spec, _MapOf):
        if not isinstance(value, dict):
            raise layer.error(key, f"expected a table of named tables, {got}")
        for name, item in value.items():
            _validate(item, spec.value, (*key, name), layer)
    else:
        if not isinstance(value, list):
            raise layer.error(key, f"expected an array of tables ([[{_display(key)}]]), {got}")
        seen: set[str] = set()
        for i, item in enumerate(value):
            _validate(item, spec.item, (*key, i), layer)
            name = item["name"]
            if name in seen:
                raise layer.error((*key, i, "name"), f'duplicate name "{name}" in this file')
            seen.add(name)


def _read_layer(label: str, path: Path) -> _Layer | None:
    """Parse and validate one file; None when it does not exist."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(f"cannot read the file: {exc.strerror}", file=str(path)) from exc
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError("the file is not valid UTF-8; save it as UTF-8", file=str(path)) from exc
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        found = re.search(r"\(at line (\d+), column \d+\)", message)
        line = int(found.group(1)) if found else None
        if line is None and "(at end of document)" in message:
            # Something left open (an array, a string): point at the last line with text.
            lines = text.splitlines()
            line = next((i + 1 for i in reversed(range(len(lines))) if lines[i].strip()), 1)
        reason = re.sub(r"\s*\(at (line \d+, column \d+|end of document)\)", "", message)
        key = None
        if line is not None:
            on_line = [e for e in scan(text) if e.line == line]
            key = _display(on_line[0].path) if on_line else None
        raise ConfigError(f"invalid TOML: {reason}", file=str(path), line=line, key=key) from exc
    layer = _Layer(label, data, path, text)
    _validate(data, SCHEMA, (), layer)
    return layer


_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}


def _coerce_flag(dotted: str, value: Any) -> Any:
    """Command-line values arrive as strings: convert them to what the key expects."""
    table, _, name = dotted.partition(".")
    spec: _Spec | None = None
    if table in _PLAIN_TABLES and name:
        table_spec = SCHEMA.fields[table]
        assert isinstance(table_spec, _Table)
        spec = table_spec.fields.get(name)
    if not isinstance(value, str) or spec is None:
        return value
    if isinstance(spec, _StrList):
        return [part.strip() for part in value.split(",") if part.strip()]
    if not isinstance(spec, _Scalar) or spec.kind == "str":
        return value
    try:
        if spec.kind == "int":
            return int(value)
        if spec.kind == "float":
            return float(value)
    except ValueError:
        return value  # validation reports it with the key and the expected type
    if value.lower() in _TRUE:
        return True
    if value.lower() in _FALSE:
        return False
    return value


def _flag_layer(overrides: Mapping[str, Any]) -> _Layer:
    data: dict[str, Any] = {}
    for dotted, value in overrides.items():
        if value is None:  # a flag that was not given (argparse default)
            continue
        table, _, name = dotted.partition(".")
        if table not in _PLAIN_TABLES or not name or "." in name:
            valid = [
                f"{t}.{k}" for t in _PLAIN_TABLES for k in cast(_Table, SCHEMA.fields[t]).fields
            ]
            raise ConfigError(
                f"cannot be set from the command line{_suggest(dotted, valid) or ';'} "
                f"settable keys: {', '.join(valid)}",
                key=dotted,
            )
        data.setdefault(table, {})[name] = _coerce_flag(dotted, value)
    layer = _Layer("flag", data)
    _validate(data, SCHEMA, (), layer)
    return layer


def _plain_defaults(instance: Any) -> dict[str, Any]:
    return {
        f.name: list(v) if isinstance(v := getattr(instance, f.name), tuple) else v
        for f in dataclasses.fields(instance)
    }


def _default_layer() -> _Layer:
    """Built-in defaults: DeepSeek flash executes, DeepSeek pro plans."""
    executor = ExecutorConfig(provider="deepseek", model=DEFAULT_EXECUTOR_MODEL)
    planner = PlannerConfig(provider="deepseek", model=DEFAULT_PLANNER_MODEL)
    data = {
        "executor": _plain_defaults(executor),
        "planner": _plain_defaults(planner),
        "providers": [
            {
                "name": "deepseek",
                "kind": "openai",
                "base_url": "https://api.deepseek.com",
                "api_key_env": DEEPSEEK_KEY_ENV,
                "headers": {},
                "extra_body": {},
            }
        ],
        "permissions": _plain_defaults(PermissionsConfig()),
        "workspace": _plain_defaults(WorkspaceConfig()),
        "compaction": _plain_defaults(CompactionConfig()),
        "budget": _plain_defaults(BudgetConfig()),
    }
    return _Layer("default", data)


# ---------------------------------------------------------------------------------------------
# Merge


class _Merged:
    """Effective values by dotted key, with the layer and path each came from."""

    __slots__ = ("models", "origin", "providers", "servers", "values")

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}
        self.origin: dict[str, tuple[_Layer, tuple[PathPart, ...]]] = {}
        self.providers: dict[str, dict[str, Any]] = {}
        self.models: dict[str, dict[str, Any]] = {}
        self.servers: dict[str, dict[str, Any]] = {}

    def put(self, dotted: str, value: Any, layer: _Layer, path: tuple[PathPart, ...]) -> None:
        self.values.pop(dotted, None)  # re-insert so provenance lists keys in a stable order
        self.values[dotted] = value
        self.origin[dotted] = (layer, path)

    def label(self, dotted: str) -> str:
        return self.origin[dotted][0].label

    def error(self, dotted: str, message: str) -> ConfigError:
        layer, path = self.origin[dotted]
        return layer.error(path, message)


def _merge(layers: list[_Layer]) -> _Merged:
    merged = _Merged()
    for layer in layers:
        data = layer.data
        for table in _PLAIN_TABLES:
            for name, value in data.get(table, {}).items():
                merged.put(f"{table}.{name}", value, layer, (table, name))
        for i, entry in enumerate(data.get("providers", [])):
            name = entry["name"]
            target = merged.providers.setdefault(name, {})
            for key, value in entry.items():
                target[key] = value
                if key != "name":
                    merged.put(f"providers.{_k(name)}.{key}", value, layer, ("providers", i, key))
            if f"providers.{_k(name)}" not in merged.origin:
                merged.origin[f"providers.{_k(name)}"] = (layer, ("providers", i))
        for model, table in data.get("models", {}).items():
            target = merged.models.setdefault(model, {})
            for key, value in table.items():
                if key == "prices":
                    for price_key, price in value.items():
                        target[f"prices.{price_key}"] = price
                        path = ("models", model, "prices", price_key)
                        merged.put(f"models.{_k(model)}.prices.{price_key}", price, layer, path)
                else:
                    target[key] = value
                    merged.put(f"models.{_k(model)}.{key}", value, layer, ("models", model, key))
        for i, server in enumerate(data.get("mcp", {}).get("servers", [])):
            name = server["name"]
            merged.servers[name] = server
            merged.put(f"mcp.servers.{_k(name)}", server, layer, ("mcp", "servers", i))
    return merged


def _build_models(merged: _Merged) -> tuple[dict[str, ModelInfo], dict[str, str]]:
    """Presets with configured tables applied on top, and provenance for their keys."""
    infos = dict(PRESETS)
    provenance: dict[str, str] = {}
    for name, table in merged.models.items():
        base = PRESETS.get(name) or ModelInfo(name)
        prices = base.prices
        given = {k.removeprefix("prices."): v for k, v in table.items() if k.startswith("prices.")}
        if not given and name not in PRESETS and table:
            # Without prices every cost would read $0 and a session budget could never stop it.
            raise merged.error(
                f"models.{_k(name)}.{next(iter(table))}",
                f"a model without a preset needs prices (USD per 1M tokens): add prices = "
                f"{{ hit = ..., miss = ..., output = ... }} to [models.{_k(name)}] "
                "(all 0 for a free local model)",
            )
        if given:
            if name not in PRESETS:
                missing = [k for k in ("hit", "miss", "output") if k not in given]
                if missing:
                    raise merged.error(
                        f"models.{_k(name)}.prices.{next(iter(given))}",
                        f"prices for a model without a preset need hit, miss and output "
                        f"(USD per 1M tokens); missing {', '.join(missing)}",
                    )
            prices = dataclasses.replace(
                prices,
                hit=float(given.get("hit", prices.hit)),
                miss=float(given.get("miss", prices.miss)),
                output=float(given.get("output", prices.output)),
                peak_multiplier=float(given.get("peak_multiplier", prices.peak_multiplier)),
            )
        plain = {k: v for k, v in table.items() if not k.startswith("prices.")}
        infos[name] = dataclasses.replace(base, name=name, prices=prices, **plain)
    for name in infos:
        for key in _MODEL_KEYS:
            provenance[f"models.{_k(name)}.{key}"] = "default"
    return infos, provenance


def _check_references(merged: _Merged, infos: Mapping[str, ModelInfo]) -> None:
    for name, entry in merged.providers.items():
        if not entry.get("base_url"):
            raise merged.error(
                f"providers.{_k(name)}",
                f'provider "{name}" has no base_url; add base_url = "https://..." '
                "(the OpenAI-compatible endpoint)",
            )
    roles = ["executor"]
    if merged.values["planner.enabled"]:
        roles.append("planner")
    names = sorted(merged.providers)
    for role in roles:
        provider = merged.values[f"{role}.provider"]
        if provider not in merged.providers:
            raise merged.error(
                f"{role}.provider",
                f'no provider named "{provider}"; define it with [[providers]] '
                f'name = "{provider}", or use one of {", ".join(names)}'
                + _suggest(provider, names),
            )
        model = merged.values[f"{role}.model"]
        if model not in infos:
            known = sorted(infos)
            raise merged.error(
                f"{role}.model",
                f'"{model}" has no preset and no [models."{model}"] table; add one with '
                f"context_window and prices, or use one of {', '.join(known)}"
                + _suggest(model, known),
            )


# ---------------------------------------------------------------------------------------------
# Public API


def user_config_path(environ: Mapping[str, str] | None = None) -> Path:
    """Where the user's ``config.toml`` lives (``$REASONIX_CONFIG_DIR`` overrides)."""
    env = os.environ if environ is None else environ
    folder = env.get(CONFIG_DIR_ENV)
    if not folder:
        import platformdirs

        folder = platformdirs.user_config_dir("reasonix")
    return Path(folder) / USER_FILE


def load_config(
    project_dir: str | os.PathLike[str] | None = None,
    *,
    overrides: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    user_config: str | os.PathLike[str] | None = None,
) -> Config:
    """Build the effective :class:`Config`.

    ``project_dir`` (default: the current directory) is searched for ``reasonix.toml``;
    ``user_config`` overrides where the user file is looked for (default
    :func:`user_config_path`); ``overrides`` are dotted keys from flags
    (``{"executor.model": "deepseek-v4-pro", "permissions.mode": "plan"}``). Missing API keys
    do not fail here: call :func:`check_credentials`. Raises :class:`ConfigError`.
    """
    project = Path(project_dir) if project_dir is not None else Path.cwd()
    user_path = Path(user_config) if user_config is not None else user_config_path(environ)
    layers = [_default_layer()]
    for label, path in (("user", user_path), ("project", project / PROJECT_FILE)):
        layer = _read_layer(f"{label}:{path}", path)
        if layer is not None:
            layers.append(layer)
    if overrides and any(value is not None for value in overrides.values()):
        layers.append(_flag_layer(overrides))
    merged = _merge(layers)
    infos, model_provenance = _build_models(merged)
    _check_references(merged, infos)

    values = merged.values

    def table(name: str) -> dict[str, Any]:
        prefix = name + "."
        return {
            k.removeprefix(prefix): tuple(v) if isinstance(v, list) else v
            for k, v in values.items()
            if k.startswith(prefix)
        }

    providers = {
        name: ProviderConfig(
            name=name,
            kind=entry.get("kind", "openai"),
            base_url=entry["base_url"],
            api_key_env=entry.get("api_key_env", ""),
            headers=_freeze(entry.get("headers", {})),
            extra_body=_freeze(entry.get("extra_body", {})),
        )
        for name, entry in merged.providers.items()
    }
    provenance = {key: merged.label(key) for key in values}
    provenance.update({k: v for k, v in model_provenance.items() if k not in provenance})
    return Config(
        executor=ExecutorConfig(**table("executor")),
        planner=PlannerConfig(**table("planner")),
        providers=MappingProxyType(providers),
        model_infos=MappingProxyType(infos),
        permissions=PermissionsConfig(**table("permissions")),
        workspace=WorkspaceConfig(**table("workspace")),
        compaction=CompactionConfig(**table("compaction")),
        budget=BudgetConfig(**table("budget")),
        mcp=McpConfig(tuple(_freeze(s) for s in merged.servers.values())),
        provenance=MappingProxyType(provenance),
        sources=tuple(layer.label for layer in layers[1:]),
    )


def check_credentials(config: Config, environ: Mapping[str, str] | None = None) -> list[str]:
    """Human-readable problems with API keys for the roles in use (empty when all is well)."""
    env = os.environ if environ is None else environ
    users: dict[str, list[str]] = {}
    roles: list[tuple[str, RoleConfig]] = [("executor", config.executor)]
    if config.planner.enabled:
        roles.append(("planner", config.planner))
    for role_name, role in roles:
        users.setdefault(role.provider, []).append(role_name)
    problems = []
    for provider_name, role_names in users.items():
        provider = config.providers[provider_name]
        if not provider.api_key_env or provider.api_key(env):
            continue
        var = provider.api_key_env
        hint = ""
        if var == DEEPSEEK_KEY_ENV:
            hint = " (create a key at https://platform.deepseek.com/api_keys)"
        problems.append(
            f"The {' and '.join(role_names)} {'use' if len(role_names) > 1 else 'uses'} provider "
            f'"{provider_name}", which reads its API key from the environment variable {var}, '
            f"but {var} is not set. Set it in your shell, e.g. `export {var}=sk-...`{hint}, or "
            f"point [executor]/[planner] at another [[providers]] entry in {PROJECT_FILE}. "
            "Keys are never read from config files."
        )
    return problems


def _format_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Mapping):
        return json.dumps(dict(value), ensure_ascii=False, sort_keys=True, default=dict)
    if isinstance(value, tuple | list):
        return json.dumps(list(value), ensure_ascii=False)
    if isinstance(value, float):
        return repr(value)
    return json.dumps(value, ensure_ascii=False)


def _effective_items(config: Config) -> list[tuple[str, Any]]:
    items: list[tuple[str, Any]] = []
    for name in _PLAIN_TABLES:
        section = getattr(config, name)
        for f in dataclasses.fields(section):
            items.append((f"{name}.{f.name}", getattr(section, f.name)))
    for provider in config.providers.values():
        for f in dataclasses.fields(provider):
            if f.name != "name":
                items.append((f"providers.{_k(provider.name)}.{f.name}", getattr(provider, f.name)))
    shown = {config.executor.model}
    if config.planner.enabled:
        shown.add(config.planner.model)
    for name, info in config.model_infos.items():
        configured = any(
            config.provenance.get(f"models.{_k(name)}.{key}", "default") != "default"
            for key in _MODEL_KEYS
        )
        if name not in shown and not configured:
            continue
        for key in _MODEL_KEYS:
            holder = info.prices if key.startswith("prices.") else info
            items.append((f"models.{_k(name)}.{key}", getattr(holder, key.removeprefix("prices."))))
    for server in config.mcp.servers:
        items.append((f"mcp.servers.{_k(server['name'])}", server))
    return items


def render_config(config: Config, environ: Mapping[str, str] | None = None) -> list[str]:
    """Effective configuration as ``key = value  # source`` lines, for ``reasonix config``.

    Also shows, per provider in use, whether its API key variable is set (never the key).
    """
    env = os.environ if environ is None else environ
    rows: list[tuple[str, str]] = []
    for key, value in _effective_items(config):
        rows.append((f"{key} = {_format_value(value)}", config.provenance.get(key, "default")))
    in_use = {config.executor.provider}
    if config.planner.enabled:
        in_use.add(config.planner.provider)
    for name in sorted(in_use):
        provider = config.providers[name]
        if provider.api_key_env:
            state = "(set)" if provider.api_key(env) else "(NOT SET)"
            rows.append((f"providers.{_k(name)}.api_key = {state}", f"env:{provider.api_key_env}"))
    width = min(max(len(left) for left, _ in rows), 56)
    lines = ["# sources (lowest to highest): default" + "".join(f", {s}" for s in config.sources)]
    lines += [f"{left.ljust(width)}  # {source}" for left, source in rows]
    return lines
