"""The configuration specification, derived from the dataclasses in :mod:`reasonix.config.schema`.

Nothing here names a key: :func:`config_spec` walks :class:`~reasonix.config.schema.Config`'s
sections and their field annotations and metadata once (cached), and :func:`validate` checks one
parsed file against the result, raising at the first problem with the file, the line, the key and
what would be valid. :func:`describe_keys` turns the same specification into help text.

Annotations map to checks: ``str`` / ``int`` / ``float`` / ``bool``; ``Literal[...]`` to a choice;
``X | None`` to ``X``; ``tuple[str, ...]`` to an array of strings; ``Mapping[str, str]`` to a
table of strings and ``Mapping[str, Any]`` to a free table; a field declared with ``item=`` to an
array of tables keyed by ``name``. Model tables (``[models."name"]``) follow
:class:`~reasonix.providers.models.ModelInfo`: counts at least 1, prices at least 0.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, Literal

from reasonix.config._locate import PathPart
from reasonix.errors import ConfigError

# Plain classes rather than dataclasses: each dataclass costs about a millisecond to create at
# import time, and config loads on every interactive start.


class Scalar:
    """A string, integer, number or boolean, optionally one of ``choices`` or within bounds."""

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


class StrList:
    """An array of strings."""

    __slots__ = ()


class FreeTable:
    """A table with arbitrary keys; ``strings`` requires every value to be a string."""

    __slots__ = ("strings",)

    def __init__(self, strings: bool = False) -> None:
        self.strings = strings


class Table:
    """A table with known keys. ``meta`` holds each key's declaration (doc, default, who may
    set it from a project file)."""

    __slots__ = ("fields", "meta", "required")

    def __init__(
        self,
        fields: Mapping[str, Spec],
        required: tuple[str, ...] = (),
        meta: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        self.fields, self.required = fields, required
        self.meta: Mapping[str, Mapping[str, Any]] = meta or {}


class MapOf:
    """A table whose keys are names chosen by the user (``[models."x"]``)."""

    __slots__ = ("value",)

    def __init__(self, value: Table) -> None:
        self.value = value


class ArrayOf:
    """An array of tables (``[[providers]]``) keyed by a unique ``name``."""

    __slots__ = ("item",)

    def __init__(self, item: Table) -> None:
        self.item = item


Spec = Scalar | StrList | FreeTable | Table | MapOf | ArrayOf


def config_keys(cls: type) -> tuple[str, ...]:
    """The configuration keys of a schema dataclass (fields not marked ``internal``)."""
    return tuple(f.name for f in dataclasses.fields(cls) if f.metadata.get("config", True))


def _default_of(f: dataclasses.Field[Any]) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


def _spec_of(hint: Any, meta: Mapping[str, Any]) -> Spec:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Union or origin is types.UnionType:
        inner = [a for a in args if a is not type(None)]
        return _spec_of(inner[0], meta)
    if origin is Literal:
        return Scalar("str", tuple(str(a) for a in args), meta.get("what") or "value")
    item = meta.get("item")
    if item is not None:
        return ArrayOf(table_of(item, required=("name",)))
    if origin is tuple:
        return StrList()
    if origin is not None and isinstance(origin, type) and issubclass(origin, Mapping):
        return FreeTable(strings=args[1:2] == (str,))
    kinds = {str: "str", int: "int", float: "float", bool: "bool"}
    if hint in kinds:
        return Scalar(kinds[hint], minimum=meta.get("minimum"), maximum=meta.get("maximum"))
    if dataclasses.is_dataclass(hint):
        return table_of(typing.cast(type, hint))
    raise TypeError(f"no configuration spec for the annotation {hint!r}")  # a schema bug


@functools.cache
def table_of(cls: type, required: tuple[str, ...] = ()) -> Table:
    """The table spec of one schema dataclass, from its annotations and field metadata."""
    hints = typing.get_type_hints(cls)
    fields: dict[str, Spec] = {}
    meta: dict[str, Mapping[str, Any]] = {}
    for f in dataclasses.fields(cls):
        if not f.metadata.get("config", True):
            continue
        fields[f.name] = _spec_of(hints[f.name], f.metadata)
        meta[f.name] = {**f.metadata, "default": _default_of(f)}
    return Table(fields, required, meta)


def _model_table() -> Table:
    from reasonix.providers.models import ModelInfo, Prices

    def numbers(cls: type, minimum: float, skip: tuple[str, ...]) -> dict[str, Spec]:
        hints = typing.get_type_hints(cls)
        out: dict[str, Spec] = {}
        for f in dataclasses.fields(cls):
            hint = hints[f.name]
            if f.name in skip or typing.get_origin(hint) is tuple:
                continue
            if hint is Prices:
                out[f.name] = Table(numbers(Prices, 0, ()))
            elif hint is bool:
                out[f.name] = Scalar("bool")
            else:
                kind = "int" if hint is int else "float"
                out[f.name] = Scalar(kind, minimum=minimum if kind == "int" else 0)
        return out

    return Table(numbers(ModelInfo, 1, ("name",)))


@functools.cache
def config_spec() -> Table:
    """The whole file format: one table per section of :class:`Config`, ``[[providers]]`` and
    ``[models."name"]``."""
    from reasonix.config.schema import Config

    hints = typing.get_type_hints(Config)
    fields: dict[str, Spec] = {}
    meta: dict[str, Mapping[str, Any]] = {}
    for f in dataclasses.fields(Config):
        if not f.metadata.get("config", True):
            continue
        shape = f.metadata.get("shape")
        name = f.metadata.get("toml", f.name)
        if shape == "named_array":
            fields[name] = ArrayOf(table_of(f.metadata["item"], required=("name",)))
        elif shape == "models":
            fields[name] = MapOf(_model_table())
        else:
            fields[name] = table_of(hints[f.name])
        meta[name] = f.metadata
    return Table(fields, (), meta)


def sections() -> tuple[str, ...]:
    """The plain sections (``[executor]``, ``[permissions]``, ``[sandbox]``, …): tables whose
    keys merge one by one across files and may be set by flags."""
    spec = config_spec()
    return tuple(name for name, sub in spec.fields.items() if isinstance(sub, Table))


def section_of(name: str) -> Table:
    spec = config_spec().fields[name]
    assert isinstance(spec, Table)
    return spec


def model_keys() -> tuple[str, ...]:
    """Dotted keys of a model table: ``context_window``, …, ``prices.hit``, …"""
    out: list[str] = []
    spec = config_spec().fields["models"]
    assert isinstance(spec, MapOf)
    for name, sub in spec.value.fields.items():
        if isinstance(sub, Table):
            out += [f"{name}.{k}" for k in sub.fields]
        else:
            out.append(name)
    return tuple(out)


def project_rule(section: str, key: str) -> str:
    """Who may set ``section.key`` from a project file: trusted | add | lower | never."""
    return str(section_of(section).meta.get(key, {}).get("project", "trusted"))


# ---------------------------------------------------------------------------------------------
# Validation


def display(key: tuple[PathPart, ...]) -> str:
    """``permissions.mode``, ``models."my.model".prices``, ``providers[1].base_url``."""
    out = ""
    for part in key:
        if isinstance(part, int):
            out += f"[{part}]"
            continue
        text = part if re.fullmatch(r"[A-Za-z0-9_-]+", part) else json.dumps(part)
        out += ("." if out else "") + text
    return out


def suggest(word: str, options: list[str] | tuple[str, ...]) -> str:
    import difflib  # only needed on the error path

    close = difflib.get_close_matches(word, list(options), n=1, cutoff=0.6)
    return f'; did you mean "{close[0]}"?' if close else ""


def type_name(value: Any) -> str:
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

ErrorAt = Callable[[tuple[PathPart, ...], str], ConfigError]


def validate(value: Any, spec: Spec, key: tuple[PathPart, ...], error: ErrorAt) -> None:
    """Raise ``error(key, message)`` at the first problem in ``value`` against ``spec``."""
    got = f"got {type_name(value)} ({json.dumps(value, default=str)[:60]})"
    if isinstance(spec, Scalar):
        ok = {
            "str": isinstance(value, str),
            "int": isinstance(value, int) and not isinstance(value, bool),
            "float": isinstance(value, int | float) and not isinstance(value, bool),
            "bool": isinstance(value, bool),
        }[spec.kind]
        if not ok:
            raise error(key, f"expected {_KIND_NOUN[spec.kind]}, {got}")
        if spec.choices and value not in spec.choices:
            raise error(
                key,
                f'"{value}" is not a valid {spec.what}; use one of {", ".join(spec.choices)}'
                + suggest(str(value), spec.choices),
            )
        if spec.minimum is not None and value < spec.minimum:
            raise error(key, f"must be at least {spec.minimum:g}, got {value}")
        if spec.maximum is not None and value > spec.maximum:
            raise error(key, f"must be at most {spec.maximum:g}, got {value}")
    elif isinstance(spec, StrList):
        if not isinstance(value, list):
            raise error(key, f"expected an array of strings, {got}")
        for i, item in enumerate(value):
            if not isinstance(item, str):
                raise error(key, f"item {i + 1} should be a string, got {type_name(item)}")
    elif isinstance(spec, FreeTable):
        if not isinstance(value, dict):
            raise error(key, f"expected a table, {got}")
        if spec.strings:
            for name, item in value.items():
                if not isinstance(item, str):
                    raise error((*key, name), f"expected a string, got {type_name(item)}")
    elif isinstance(spec, Table):
        if not isinstance(value, dict):
            raise error(key, f"expected a table, {got}")
        for name, item in value.items():
            sub = spec.fields.get(name)
            if sub is None:
                where = f"in [{display(key)}]" if key else "at the top level"
                noun = "table" if isinstance(item, dict | list) and not key else "key"
                hint = suggest(name, list(spec.fields)) or ";"
                raise error(
                    (*key, name),
                    f'unknown {noun} "{name}" {where}{hint} valid: {", ".join(spec.fields)}',
                )
            validate(item, sub, (*key, name), error)
        for name in spec.required:
            if name not in value:
                raise error(key, f'missing required key "{name}"')
    elif isinstance(spec, MapOf):
        if not isinstance(value, dict):
            raise error(key, f"expected a table of named tables, {got}")
        for name, item in value.items():
            validate(item, spec.value, (*key, name), error)
    else:
        if not isinstance(value, list):
            raise error(key, f"expected an array of tables ([[{display(key)}]]), {got}")
        seen: set[str] = set()
        for i, item in enumerate(value):
            validate(item, spec.item, (*key, i), error)
            name = item["name"]
            if name in seen:
                raise error((*key, i, "name"), f'duplicate name "{name}" in this file')
            seen.add(name)


# ---------------------------------------------------------------------------------------------
# Help text


def _type_text(spec: Spec) -> str:
    if isinstance(spec, Scalar):
        if spec.choices:
            return " | ".join(spec.choices)
        text = {"str": "string", "int": "integer", "float": "number", "bool": "true | false"}
        bounds = ""
        if spec.minimum is not None:
            bounds += f", >= {spec.minimum:g}"
        if spec.maximum is not None:
            bounds += f", <= {spec.maximum:g}"
        return text[spec.kind] + bounds
    if isinstance(spec, StrList):
        return "array of strings"
    if isinstance(spec, FreeTable):
        return "table of strings" if spec.strings else "table"
    return "table"


_RULE_TEXT = {
    "trusted": "",
    "add": "  [a project may only add]",
    "lower": "  [a project may only lower]",
    "never": "  [user config only]",
}


def describe_keys() -> list[str]:
    """Every key as ``section.key  type  (default)  doc``, for ``reasonix config --keys``."""
    lines: list[str] = []

    def table(prefix: str, spec: Table) -> None:
        for name, sub in spec.fields.items():
            meta = spec.meta.get(name, {})
            dotted = f"{prefix}.{name}" if prefix else name
            if isinstance(sub, ArrayOf):
                lines.append(f"[[{dotted}]]  {meta.get('doc', '')}".rstrip())
                table(f"  {dotted}[]", sub.item)
                continue
            if isinstance(sub, Table) and not meta.get("doc"):
                table(dotted, sub)
                continue
            default = meta.get("default", dataclasses.MISSING)
            shown = "" if default in (dataclasses.MISSING, None) else f"  (default {default!r})"
            if isinstance(default, Mapping) or default == () or default == "":
                shown = ""
            doc = meta.get("doc", "")
            rule = _RULE_TEXT.get(str(meta.get("project", "trusted")), "")
            lines.append(f"{dotted}  {_type_text(sub)}{shown}  {doc}{rule}".rstrip())

    spec = config_spec()
    for name, sub in spec.fields.items():
        if isinstance(sub, ArrayOf):
            lines.append(f"[[{name}]]")
            table(f"  {name}[]", sub.item)
        elif isinstance(sub, MapOf):
            table('models."NAME"', sub.value)
        else:
            assert isinstance(sub, Table)
            table(name, sub)
    return lines
