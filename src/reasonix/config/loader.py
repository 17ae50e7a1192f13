"""Load, validate and merge configuration, and record where every value came from.

Precedence, lowest to highest: built-in defaults, the user's ``config.toml`` (in
``platformdirs.user_config_dir("reasonix")`` or ``$REASONIX_CONFIG_DIR``), the project's
``reasonix.toml``, then overrides (command-line flags, dotted keys such as ``executor.model``).

Every layer is validated on its own, so an error names the file, the line and the key that is
wrong and says what would be valid. Cross-references (a role naming a provider or a model) are
checked after merging and reported at the place the offending value was written.

Merging: plain tables merge key by key; ``[[providers]]`` entries merge by ``name`` key by key (a
user can change only ``base_url`` of ``deepseek``); ``[models."name"]`` tables merge key by
key over the presets; ``[[mcp.servers]]`` entries with the same ``name`` replace each other whole.

What the keys are comes from :mod:`reasonix.config.schema` (through :mod:`reasonix.config.spec`);
nothing here names a section's keys. Showing the result (``reasonix config``, missing
keys) is :mod:`reasonix.config.report`'s. A project file is held to the rules the schema declares
(``project=`` on each key) and to the user's trust (:mod:`reasonix.config.trust`): what it may
not set is left out and listed in ``Config.ignored``.

It runs past 500 lines because loading is one pass over ordered layers that must agree on every
value's origin: reading a file, coercing flags, merging by the trust rules, building models and
checking references all record and report against the same provenance, so an error names the
file, line and key that caused it. The keys themselves are declared in the schema, not here.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import stat
import tomllib
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from reasonix.config import spec as _spec
from reasonix.config._locate import PathPart, locate, scan
from reasonix.config.hooks import HookGroup, HookShapeError, parse_hook_table
from reasonix.config.schema import (
    DEEPSEEK_KEY_ENV,
    DEFAULT_PROVIDERS,
    Config,
    PlannerConfig,
    ProviderConfig,
)
from reasonix.config.spec import ArrayOf, Scalar, StrList
from reasonix.config.trust import TRUST_FILE, TrustDecision, TrustStore, decide
from reasonix.errors import ConfigError
from reasonix.providers.models import PRESETS, ModelInfo, retired_model_message

PROJECT_FILE = "reasonix.toml"
MCP_JSON_FILE = ".mcp.json"
USER_FILE = "config.toml"
CONFIG_DIR_ENV = "REASONIX_CONFIG_DIR"

__all__ = [
    "CONFIG_DIR_ENV",
    "DEEPSEEK_KEY_ENV",
    "PROJECT_FILE",
    "USER_FILE",
    "load_config",
    "user_config_path",
]

# ---------------------------------------------------------------------------------------------
# Layers


class _Layer:
    """One source of configuration: its provenance label, file and parsed data."""

    __slots__ = ("data", "hooks", "label", "path", "text")

    def __init__(
        self, label: str, data: dict[str, Any], path: Path | None = None, text: str | None = None
    ) -> None:
        self.label, self.data, self.path, self.text = label, data, path, text
        self.hooks: tuple[HookGroup, ...] = ()

    @property
    def is_project(self) -> bool:
        return self.label.startswith("project:")

    def error(self, key: tuple[PathPart, ...], message: str) -> ConfigError:
        line = locate(self.text, key) if self.text is not None else None
        if self.label == "flag":
            message += " (from a command-line flag)"
        return ConfigError(
            message,
            file=str(self.path) if self.path else None,
            line=line,
            key=_spec.display(key),
        )


def _k(name: str) -> str:
    """A name as one segment of a dotted provenance key (quoted unless bare)."""
    return _spec.display((name,))


def _freeze(value: Any) -> Any:
    """Lists become tuples and tables read-only mappings, so a Config cannot be mutated."""
    if isinstance(value, list | tuple):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, dict | MappingProxyType):
        return MappingProxyType({k: _freeze(v) for k, v in value.items()})
    return value


def _thaw(value: Any) -> Any:
    """Tuples become lists and mappings dicts: the shape ``tomllib`` gives."""
    if isinstance(value, Mapping):
        return {str(k): _thaw(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [_thaw(v) for v in value]
    return value


#: Larger configuration files are refused: no one writes one this big by hand.
MAX_CONFIG_BYTES = 1024 * 1024


def read_config_file(path: Path, limit: int = MAX_CONFIG_BYTES) -> bytes | None:
    """The bytes of a configuration file, None when it does not exist. Anything but a regular
    file (a FIFO, ``/dev/zero`` behind a symlink) or a file over ``limit`` bytes is a
    :class:`ConfigError`, so a repository cannot stall or exhaust start-up with one."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(f"cannot read the file: {exc.strerror}", file=str(path)) from exc
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ConfigError("not a regular file; replace it with one", file=str(path))
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise ConfigError(
            f"larger than {limit // 1024} KiB; this is not a config file", file=str(path)
        )
    return data


def _read_layer(label: str, path: Path) -> _Layer | None:
    """Parse and validate one file; None when it does not exist."""
    raw = read_config_file(path)
    if raw is None:
        return None
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
            key = _spec.display(on_line[0].path) if on_line else None
        raise ConfigError(f"invalid TOML: {reason}", file=str(path), line=line, key=key) from exc
    # Hooks have Claude Code's shape (event -> matcher groups -> commands), checked on their own.
    hooks = data.pop("hooks", None)
    layer = _Layer(label, data, path, text)
    _spec.validate(data, _spec.config_spec(), (), layer.error)
    if hooks is not None:
        try:
            layer.hooks = parse_hook_table(hooks, label)
        except HookShapeError as exc:
            raise layer.error(exc.key, str(exc)) from None
    return layer


#: List keys a command-line flag adds to instead of replacing.
_FLAG_ADDS = frozenset({"permissions.allow", "permissions.deny", "workspace.roots"})

_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}


def _coerce_flag(dotted: str, value: Any) -> Any:
    """Command-line values arrive as strings: convert them to what the key expects."""
    table, _, name = dotted.partition(".")
    spec: _spec.Spec | None = None
    if table in _spec.sections() and name:
        spec = _spec.section_of(table).fields.get(name)
    if not isinstance(value, str) or spec is None:
        return value
    if isinstance(spec, StrList):
        return [part.strip() for part in value.split(",") if part.strip()]
    if not isinstance(spec, Scalar) or spec.kind == "str":
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


def _claude_items(project: Path) -> list[str]:
    """What an untrusted folder's ``.claude/`` would make take effect, for the one notice (and
    ``doctor``): each settings file's hook events, and the folders of commands, subagent
    profiles, skills and hook scripts that are not loaded."""
    import json

    items: list[str] = []
    base = project / ".claude"
    for name in ("settings.json", "settings.local.json"):
        path = base / name
        if path.is_symlink() or not path.is_file():
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8", errors="replace")[:1_000_000])
        except (OSError, ValueError):
            continue
        hooks = data.get("hooks") if isinstance(data, dict) else None
        if isinstance(hooks, dict) and hooks:
            events = ", ".join(str(e)[:40] for e in list(hooks)[:8])
            items.append(f".claude/{name}: hooks ({events})")
    folders = [f for f in ("commands", "agents", "skills", "hooks") if _has_entries(base / f)]
    if folders:
        items.append(f".claude/: {', '.join(folders)} (not loaded)")
    return items


def _has_entries(folder: Path) -> bool:
    try:
        return folder.is_dir() and not folder.is_symlink() and any(folder.iterdir())
    except OSError:
        return False


def _flag_layer(overrides: Mapping[str, Any]) -> _Layer:
    data: dict[str, Any] = {}
    for dotted, value in overrides.items():
        if value is None:  # a flag that was not given (argparse default)
            continue
        table, _, name = dotted.partition(".")
        valid = _flag_keys()
        if table not in _spec.sections() or not name or "." in name:
            raise ConfigError(
                f"cannot be set from the command line{_spec.suggest(dotted, valid) or ';'} "
                f"settable keys: {', '.join(valid)}",
                key=dotted,
            )
        data.setdefault(table, {})[name] = _coerce_flag(dotted, value)
    layer = _Layer("flag", data)
    _spec.validate(data, _spec.config_spec(), (), layer.error)
    return layer


def _flag_keys() -> list[str]:
    """Keys a command-line override may set: every plain key of every section."""
    return [
        f"{table}.{key}"
        for table in _spec.sections()
        for key, sub in _spec.section_of(table).fields.items()
        if isinstance(sub, Scalar | StrList)
    ]


def _plain_defaults(name: str, instance: Any) -> dict[str, Any]:
    """A section's defaults as TOML-shaped data (arrays of tables have no default entries)."""
    out: dict[str, Any] = {}
    section = _spec.section_of(name)
    for name, sub in section.fields.items():
        if not isinstance(sub, ArrayOf):
            out[name] = _thaw(getattr(instance, name))
    return out


def _default_layer() -> _Layer:
    """Built-in defaults, from the dataclasses: DeepSeek flash executes, DeepSeek pro plans."""
    defaults = Config()
    data: dict[str, Any] = {
        name: _plain_defaults(name, getattr(defaults, name)) for name in _spec.sections()
    }
    data["providers"] = [
        {k: _thaw(getattr(p, k)) for k in _spec.config_keys(ProviderConfig)}
        for p in DEFAULT_PROVIDERS
    ]
    return _Layer("default", data)


# ---------------------------------------------------------------------------------------------
# Merge


class _Merged:
    """Effective values by dotted key, with the layer and path each came from, and what was
    left out of project files (and why)."""

    __slots__ = ("arrays", "ignored", "items", "models", "origin", "providers", "values")

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}
        self.origin: dict[str, tuple[_Layer, tuple[PathPart, ...]]] = {}
        self.providers: dict[str, dict[str, Any]] = {}
        self.models: dict[str, dict[str, Any]] = {}
        # "section.key" of an array of tables -> entries by name, in order
        self.arrays: dict[str, dict[str, Any]] = {}
        self.ignored: list[str] = []
        # a list key -> each of its items -> the layer that brought it (``/permissions``)
        self.items: dict[str, dict[str, str]] = {}

    def put(
        self,
        dotted: str,
        value: Any,
        layer: _Layer,
        path: tuple[PathPart, ...],
        *,
        extends: bool = False,
    ) -> None:
        """Set ``dotted``; ``extends``: ``value`` is the previous list with items added, so the
        items already there keep where they came from."""
        self.values.pop(dotted, None)  # re-insert so provenance lists keys in a stable order
        self.values[dotted] = value
        self.origin[dotted] = (layer, path)
        if isinstance(value, list):
            before = self.items.get(dotted, {}) if extends else {}
            self.items[dotted] = {str(v): before.get(str(v), layer.label) for v in value}

    def label(self, dotted: str) -> str:
        return self.origin[dotted][0].label

    def error(self, dotted: str, message: str) -> ConfigError:
        layer, path = self.origin[dotted]
        return layer.error(path, message)

    def ignore(self, layer: _Layer, what: str) -> None:
        name = layer.path.name if layer.path is not None else layer.label
        self.ignored.append(f"{name}: {what}")


def _lowers(previous: Any, value: Any) -> bool:
    """For ``project = "lower"`` keys, where 0 means no limit: True when ``value`` is at least
    as strict as ``previous`` (a limit where there was none, or a smaller one)."""
    if value == previous:
        return True
    if value == 0:
        return False
    return bool(previous == 0 or value < previous)


def _merge(layers: list[_Layer], trust: TrustDecision) -> _Merged:
    merged = _Merged()
    for layer in layers:
        project = layer.is_project
        data = layer.data
        dropped = _merge_providers(merged, layer, trust) if project else set()
        if not project:
            for i, entry in enumerate(data.get("providers", [])):
                _put_provider(merged, layer, i, entry)
        for table in _spec.sections():
            section = _spec.section_of(table)
            for name, value in data.get(table, {}).items():
                dotted = f"{table}.{name}"
                extends = False
                if isinstance(section.fields[name], ArrayOf):
                    _merge_array(merged, layer, trust, table, name, value)
                    continue
                rule = _spec.project_rule(table, name)
                if project:
                    if rule == "never":
                        merged.ignore(layer, f"{dotted} (only your own config.toml can set it)")
                        continue
                    if not trust.trusted and rule not in ("add", "lower"):
                        merged.ignore(layer, f"{dotted} = {_shown(value)}")
                        continue
                    previous = merged.values.get(dotted)
                    extends = rule == "add" and isinstance(previous, list)
                    if rule == "add" and isinstance(value, list):
                        # A "!pattern" in a deny list re-allows what came before it (gitignore
                        # style), so from a project it would loosen, not add: left out.
                        negations = [v for v in value if isinstance(v, str) and v.startswith("!")]
                        if negations:
                            merged.ignore(
                                layer,
                                f"{dotted} += {_shown(negations)} (a project may only add "
                                "protections, not lift them)",
                            )
                            value = [v for v in value if v not in negations]
                    if rule == "add" and isinstance(previous, list):
                        value = previous + [v for v in value if v not in previous]
                    elif rule == "lower" and not _lowers(previous, value):
                        merged.ignore(
                            layer, f"{dotted} = {_shown(value)} (a project may only lower it)"
                        )
                        continue
                    if name == "provider" and value in dropped:
                        merged.ignore(layer, f"{dotted} = {_shown(value)}")
                        continue
                if layer.label == "flag" and dotted in _FLAG_ADDS and isinstance(value, list):
                    # --allowedTools/--disallowedTools/--add-dir add to the user's lists: a
                    # flag never drops a configured deny rule.
                    previous = merged.values.get(dotted)
                    if isinstance(previous, list):
                        value = previous + [v for v in value if v not in previous]
                        extends = True
                merged.put(dotted, value, layer, (table, name), extends=extends)
        for model, table_data in data.get("models", {}).items():
            if project and not trust.trusted:
                merged.ignore(layer, f"models.{_k(model)}")
                continue
            target = merged.models.setdefault(model, {})
            for key, value in table_data.items():
                if key == "prices":
                    known = model in PRESETS or any(k.startswith("prices.") for k in target)
                    if project and known:
                        # The budget relies on these prices: a project may not cheapen them.
                        merged.ignore(layer, f"models.{_k(model)}.prices (a known model's)")
                        continue
                    for price_key, price in value.items():
                        target[f"prices.{price_key}"] = price
                        path = ("models", model, "prices", price_key)
                        merged.put(f"models.{_k(model)}.prices.{price_key}", price, layer, path)
                else:
                    target[key] = value
                    merged.put(f"models.{_k(model)}.{key}", value, layer, ("models", model, key))
    return merged


def _shown(value: Any, limit: int = 80) -> str:
    """A project file's value as it may be printed: JSON (control and non-ASCII characters
    escaped, so a file cannot steer the terminal), cut to ``limit`` characters — a list item by
    item, every item shown (the last rule of an allow list is as much a rule as the first)."""
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_shown(item, limit) for item in value) + "]"
    text = json.dumps(value, ensure_ascii=True, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


#: A URL a key would go to is shown whole: cut, ``https://api.deepseek.com.<padding>...`` hides
#: the host it really names.
_URL_SHOWN = 4096


def _sends(entry: Mapping[str, Any]) -> str:
    var, url = entry.get("api_key_env"), entry.get("base_url", "")
    if var:
        return f" (sends ${var} to {_shown(url, _URL_SHOWN)})"
    return f" (talks to {_shown(url, _URL_SHOWN)})"


def _put_provider(merged: _Merged, layer: _Layer, i: int, entry: Mapping[str, Any]) -> None:
    name = entry["name"]
    target = merged.providers.setdefault(name, {})
    for key, value in entry.items():
        target[key] = value
        if key != "name":
            merged.put(f"providers.{_k(name)}.{key}", value, layer, ("providers", i, key))
    if f"providers.{_k(name)}" not in merged.origin:
        merged.origin[f"providers.{_k(name)}"] = (layer, ("providers", i))


def _merge_providers(merged: _Merged, layer: _Layer, trust: TrustDecision) -> set[str]:
    """Apply a project file's ``[[providers]]``: nothing from an untrusted folder; from a trusted
    one, nothing that would send a key the user's providers use to a base URL the user did not
    configure (a project's own key variable is the user's to accept by trusting it). Returns
    the names left out."""
    dropped: set[str] = set()
    user_urls: dict[str, set[str]] = {}
    for entry in merged.providers.values():
        if entry.get("api_key_env"):
            user_urls.setdefault(entry["api_key_env"], set()).add(entry.get("base_url", ""))
    for i, entry in enumerate(layer.data.get("providers", [])):
        name = entry["name"]
        if not trust.trusted:
            result = {**merged.providers.get(name, {}), **entry}
            merged.ignore(layer, f"providers.{_k(name)}{_sends(result)}")
            dropped.add(name)
            continue
        result = {**merged.providers.get(name, {}), **entry}
        var, url = result.get("api_key_env", ""), result.get("base_url", "")
        if var in user_urls and url not in user_urls[var]:
            merged.ignore(
                layer,
                f"providers.{_k(name)} (would send your {var} to {_shown(url, _URL_SHOWN)}, a "
                "base URL you "
                "have not configured; set it in your own config.toml to use it)",
            )
            dropped.add(name)
            continue
        _put_provider(merged, layer, i, entry)
    return dropped


def _merge_array(
    merged: _Merged, layer: _Layer, trust: TrustDecision, table: str, key: str, entries: Any
) -> None:
    """Entries of an array of tables (``[[mcp.servers]]``) with the same name replace each
    other whole; an untrusted project adds none."""
    dotted = f"{table}.{key}"
    target = merged.arrays.setdefault(dotted, {})
    for i, entry in enumerate(entries):
        name = entry["name"]
        if layer.is_project and not trust.trusted:
            runs = entry.get("command") or entry.get("url") or ""
            merged.ignore(layer, f"{dotted}.{_k(name)} ({_shown(runs)})")
            continue
        if layer.is_project:
            entry = _without_user_only(layer, table, key, entry, f"{dotted}.{_k(name)}", merged)
        target.pop(name, None)
        target[name] = entry
        merged.put(f"{dotted}.{_k(name)}", entry, layer, (table, key, i))


def _without_user_only(
    layer: _Layer, table: str, key: str, entry: Mapping[str, Any], where: str, merged: _Merged
) -> dict[str, Any]:
    """A project's array entry without the keys only the user's own config may set
    (``trust_annotations`` of an MCP server)."""
    spec = _spec.section_of(table).fields[key]
    meta = spec.item.meta if isinstance(spec, ArrayOf) else {}
    kept = {}
    for name, value in entry.items():
        if meta.get(name, {}).get("project") == "never":
            merged.ignore(layer, f"{where}.{name} (only your own config can set it)")
            continue
        kept[name] = value
    return kept


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
        for key in _spec.model_keys():
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
    if merged.values.get("planner.enabled", PlannerConfig().enabled):
        roles.append("planner")
    if merged.values.get("review.provider") or merged.values.get("review.model"):
        roles.append("review")
    names = sorted(merged.providers)
    for role in roles:
        provider = merged.values[f"{role}.provider"] or merged.values["executor.provider"]
        if provider not in merged.providers:
            raise merged.error(
                f"{role}.provider",
                f'no provider named "{provider}"; define it with [[providers]] '
                f'name = "{provider}", or use one of {", ".join(names)}'
                + _spec.suggest(provider, names),
            )
        model = merged.values[f"{role}.model"] or merged.values["executor.model"]
        retired = retired_model_message(model)
        if model not in infos and retired is not None:
            raise merged.error(f"{role}.model", retired)
        if model not in infos:
            known = sorted(infos)
            raise merged.error(
                f"{role}.model",
                f'"{model}" has no preset and no [models."{model}"] table; add one with '
                f"context_window and prices, or use one of {', '.join(known)}"
                + _spec.suggest(model, known),
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
    trust: bool | None = True,
) -> Config:
    """Build the effective :class:`Config`.

    ``project_dir`` (default: the current directory) is searched for ``reasonix.toml``;
    ``user_config`` overrides where the user file is looked for (default
    :func:`user_config_path`); ``overrides`` are dotted keys from flags
    (``{"executor.model": "deepseek-v4-pro", "permissions.mode": "plan"}``). Missing API keys
    do not fail here: call :func:`check_credentials`. Raises :class:`ConfigError`.

    ``trust`` says whether the project folder's files may decide anything: ``True`` (a library
    caller who chose the folder, or ``--trust``), ``False``, or ``None`` to ask the user's own
    records (:mod:`reasonix.config.trust`: ``[trust] folders`` and remembered answers), which is
    what the command line does. An untrusted project's ``reasonix.toml`` may only add deny
    rules and lower the budget; everything else it says, and its ``.mcp.json``, is listed in
    ``Config.ignored`` instead. Even a trusted project may only add deny rules, only lower the
    budget, and never send a key your providers use to a base URL you did not configure.
    """
    project = Path(project_dir) if project_dir is not None else Path.cwd()
    user_path = Path(user_config) if user_config is not None else user_config_path(environ)
    layers = [_default_layer()]
    user_layer = _read_layer(f"user:{user_path}", user_path)
    if user_layer is not None:
        layers.append(user_layer)
    project_layer = _read_layer(f"project:{project / PROJECT_FILE}", project / PROJECT_FILE)
    if project_layer is not None:
        layers.append(project_layer)
    if overrides and any(value is not None for value in overrides.values()):
        layers.append(_flag_layer(overrides))
    folders = (user_layer.data if user_layer else {}).get("trust", {}).get("folders", [])
    decision = decide(
        project,
        flag=trust is True,
        folders=folders if trust is None else (),
        store=TrustStore(user_path.parent / TRUST_FILE),
    )
    if trust is False:
        decision = TrustDecision(False)
    merged = _merge(layers, decision)
    if decision.planted:
        merged.ignored.append(
            f"{', '.join(decision.planted)}: created by a background job that still runs or "
            "ended without reasonix undoing it (the folder is not trusted while they are there: "
            "remove them, or the job's record in running-jobs/ of your config folder if you "
            "made them yourself)"
        )
    hooks: list[HookGroup] = []
    for layer in layers:
        if layer.is_project and not decision.trusted:
            if layer.hooks:
                merged.ignored.append("hooks (the folder is not trusted)")
            continue
        hooks.extend(layer.hooks)
    if not decision.trusted and (project / MCP_JSON_FILE).exists():
        merged.ignored.append(f"{MCP_JSON_FILE}: {_mcp_json_names(project / MCP_JSON_FILE)}")
    if not decision.trusted:
        merged.ignored.extend(_claude_items(project))
    infos, model_provenance = _build_models(merged)
    _check_references(merged, infos)

    values = merged.values

    def section(name: str) -> Any:
        cls = type(getattr(Config(), name))
        prefix = name + "."
        kwargs: dict[str, Any] = {
            k.removeprefix(prefix): _freeze(v)
            for k, v in values.items()
            if k.startswith(prefix) and "." not in k.removeprefix(prefix)
        }
        for dotted, entries in merged.arrays.items():
            if dotted.startswith(prefix):
                kwargs[dotted.removeprefix(prefix)] = tuple(_freeze(e) for e in entries.values())
        return cls(**kwargs)

    providers = {
        name: ProviderConfig(
            **{k: _freeze(v) for k, v in entry.items() if k in _spec.config_keys(ProviderConfig)}
        )
        for name, entry in merged.providers.items()
    }
    provenance = {key: merged.label(key) for key in values}
    provenance.update({k: v for k, v in model_provenance.items() if k not in provenance})
    return Config(
        **{name: section(name) for name in _spec.sections()},
        providers=MappingProxyType(providers),
        model_infos=MappingProxyType(infos),
        provenance=MappingProxyType(provenance),
        item_provenance=MappingProxyType(
            {key: MappingProxyType(items) for key, items in merged.items.items()}
        ),
        sources=tuple(layer.label for layer in layers[1:]),
        ignored=tuple(merged.ignored),
        trusted=decision.trusted,
        hooks=tuple(hooks),
    )


def _mcp_json_names(path: Path) -> str:
    """``MCP servers a, b`` from a ``.mcp.json`` we are not going to use, read leniently."""
    try:
        raw = read_config_file(path) or b"{}"
        servers = json.loads(raw.decode("utf-8")).get("mcpServers", {})
        names = ", ".join(_k(str(n)) for n in servers) if isinstance(servers, dict) else ""
    except (ConfigError, ValueError, AttributeError):
        names = ""
    return f"MCP servers {names}" if names else "MCP servers"
