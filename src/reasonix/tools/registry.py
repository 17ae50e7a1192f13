"""Tools and the registry the agents call them through.

A tool is a typed Python callable (sync or async) with a name, a description, a JSON schema made
from its signature, and flags (``read_only``, ``destructive``). Schemas are canonical: keys are
sorted when serialised and tools keep a fixed (sorted by name) order, so the bytes the model sees
never change within a session.

``ToolRegistry.execute`` never raises for the model's mistakes: broken JSON, arguments over the
size or nesting limits, a schema mismatch, an unknown tool, a refused permission, a timeout or an
exception inside the tool each become a ``ToolResult`` with ``is_error=True`` whose text tells
the model what went wrong. The registry carries the :class:`~reasonix.tools.limits.ToolLimits`
of its host and bounds how many calls run at once.

The module runs past 500 lines on purpose: the schema made from a signature, the validation of
the model's arguments against it and the coercion into the callable's types must agree exactly,
and keeping them beside the registry that applies them keeps that contract in one file.
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import importlib
import inspect
import json
import re
import types
import typing
import weakref
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, Protocol, Union, get_args, get_origin, overload

from reasonix.errors import ToolDefinitionError
from reasonix.messages import ImagePart, canonical_json
from reasonix.tools.limits import (
    DEFAULT_LIMITS,
    ArgumentsRejected,
    ConcurrencySlots,
    ToolLimits,
    parse_arguments,
)

TOOL_NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


# ---------------------------------------------------------------------------------------------
# Results and context


@dataclass(frozen=True, slots=True)
class Effect:
    """Something the host observed a tool do; feeds the progress ledger.

    ``kind``: ``write`` (a file changed), ``command`` (a shell command ran), ``job`` (a command
    started in the background; its result is not known), ``read`` (something was read),
    ``todo`` (a todo item was completed), ``call`` (any other successful tool call).
    ``target`` names the thing (a path, a command line); ``digest`` identifies the outcome, so the
    same call with the same outcome is recognised as no new progress. ``ok`` is False for a
    failed command (still recorded, so repeated failures can be detected).
    """

    kind: str
    target: str
    digest: str = ""
    ok: bool = True


@dataclass(frozen=True, slots=True)
class Charge:
    """A paid request a tool made (``web_search``): ``requests`` made, ``billed`` of them
    (a provider may not bill empty or failed ones), and their price in USD and CNY."""

    service: str
    requests: int
    billed: int
    cost: float
    cost_cny: float


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a tool call produced. ``needs_input``: the call waits for the user, whom no one
    can ask here (``ask`` in a headless run): the agent stops with ``needs_input`` and leaves
    the call open for the user's next input to answer."""

    content: str
    is_error: bool = False
    effects: tuple[Effect, ...] = ()
    needs_input: bool = False
    #: images shown to the model with the result (``read_file`` on an image)
    images: tuple[ImagePart, ...] = ()
    #: what the call paid a service for (``web_search``), counted on the calling role
    charge: Charge | None = None
    #: the permission policy's decision when it refused the call (the call did not run): how
    #: a refusal is told from a failure, never by the wording of ``content``
    refusal: PermissionDecision | None = None
    #: a preview whose text leaves part of the call's effect out (a diff cut to fit), which the
    #: call's arguments do not carry either: auto mode's reviewer does not judge such a call
    cut: bool = False

    @classmethod
    def error(cls, message: str) -> ToolResult:
        return cls(message, is_error=True)

    @classmethod
    def refused_by(cls, name: str, decision: PermissionDecision) -> ToolResult:
        """The result of a call the permission policy refused, carrying its decision."""
        why = decision.reason or "refused by the permission rules"
        return cls(f"{PERMISSION_DENIED} {name}: {why}", is_error=True, refusal=decision)

    @property
    def refused(self) -> bool:
        return self.refusal is not None


#: how a refused call's result begins, as the model reads it (the text only: a refusal is
#: recognised by :attr:`ToolResult.refused`)
PERMISSION_DENIED = "Permission denied for"


@dataclass
class ToolContext:
    """What the host passes to a tool that asks for it (a parameter annotated ``ToolContext``).

    ``state`` holds host objects tools may need (the checkpoint manager, the todo state, …) by
    name; tools must tolerate a missing entry.
    """

    workspace: Path
    role: str = "executor"
    turn: int = 0
    call_id: str = ""
    state: dict[str, Any] = field(default_factory=dict)
    #: what the call will do (the tool's preview), for the permission layer to show
    preview: str = ""
    #: the preview leaves part of the effect out (:attr:`ToolResult.cut`)
    preview_cut: bool = False
    #: asks the permission policy about other arguments of the same tool, for a tool that
    #: learns where it really goes while it runs (``web_fetch`` following a redirect); None
    #: when the registry has no policy
    recheck: Callable[[Mapping[str, Any]], Awaitable[PermissionDecision]] | None = None


class Permission(enum.StrEnum):
    ALLOW = "allow"
    DENY = "deny"


@dataclass(frozen=True, slots=True)
class PermissionDecision:
    permission: Permission
    reason: str = ""

    @property
    def allowed(self) -> bool:
        return self.permission is Permission.ALLOW


class PermissionPolicy(Protocol):
    """Decides, after arguments validated and before the tool runs, whether a call may run.
    Implementations may ask the user (an approval callback) before answering."""

    async def check(
        self, tool: Tool, arguments: Mapping[str, Any], ctx: ToolContext
    ) -> PermissionDecision: ...


# ---------------------------------------------------------------------------------------------
# Tool


ToolFunc = Callable[..., Any]

#: What a tool is, in the Agent Client Protocol's words (``ToolKind`` of its schema).
ToolKind = Literal[
    "read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"
]


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: Mapping[str, Any]
    func: ToolFunc
    read_only: bool = False
    destructive: bool = False
    timeout: float | None = None
    context_param: str | None = None
    #: a free-form group name used by permission rules, e.g. ``edit`` for write_file/edit_file.
    category: str = ""
    #: what the tool is, in the Agent Client Protocol's vocabulary (an editor's icon and panel)
    kind: ToolKind = "other"
    #: Claude Code's names for it (hooks' ``tool_name`` is the first; agent profiles may grant
    #: it by any of them)
    aliases: tuple[str, ...] = ()
    #: the arguments that name what a call acts on, most telling first: permission rules
    #: match the first one a call gives (``command``: a shell line, ``path``: a file or folder,
    #: any other, such as ``url``, as written) and every frontend shows it as the call's subject
    subjects: tuple[str, ...] = ()
    #: it changes files in the workspace
    writes: bool = False
    #: ``preview(arguments, ctx)``: what the call will do (a diff, the command) for the one
    #: approving it, without doing it; an error result means the call would fail, and it is
    #: refused with that error before anyone is asked.
    preview: Callable[[Mapping[str, Any], ToolContext], ToolResult] | None = None
    #: ends what the tool holds between calls (``bash``'s kept sandbox) when the host that
    #: built it closes (:meth:`ToolRegistry.close`); a later call may start it again
    close: Callable[[], None] | None = None

    def __post_init__(self) -> None:
        if not TOOL_NAME_RE.match(self.name):
            raise ToolDefinitionError(
                f"Tool name {self.name!r} is not allowed: use 1-64 characters from [a-zA-Z0-9_-]."
            )

    def subject_text(self, arguments: Mapping[str, Any]) -> str:
        """What a call acts on, for a person: the first declared subject argument the call
        gives (a path, a command, a URL); empty when it gives none."""
        for name in self.subjects:
            value = arguments.get(name)
            if isinstance(value, str | int) and not isinstance(value, bool) and str(value):
                return str(value)
        return ""

    def schema(self) -> dict[str, Any]:
        """The wire form sent to the model."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": dict(self.parameters),
            },
        }

    @classmethod
    def from_function(
        cls,
        func: ToolFunc,
        *,
        name: str | None = None,
        description: str | None = None,
        read_only: bool = False,
        destructive: bool = False,
        timeout: float | None = None,
        category: str = "",
        kind: ToolKind = "other",
        aliases: tuple[str, ...] = (),
        subjects: tuple[str, ...] = (),
        writes: bool = False,
        close: Callable[[], None] | None = None,
    ) -> Tool:
        """Build a tool from a typed callable. Parameter descriptions come from
        ``Annotated[T, "description"]``; the description from the docstring."""
        params, ctx_param = schema_from_signature(func)
        doc = description if description is not None else inspect.getdoc(func) or ""
        return cls(
            name=name or func.__name__,
            description=doc.strip(),
            parameters=params,
            func=func,
            read_only=read_only,
            destructive=destructive,
            timeout=timeout,
            context_param=ctx_param,
            category=category,
            kind=kind,
            aliases=aliases,
            subjects=subjects,
            writes=writes,
            close=close,
        )


@overload
def tool(func: ToolFunc, /) -> Tool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    read_only: bool = False,
    destructive: bool = False,
    timeout: float | None = None,
    category: str = "",
    kind: ToolKind = "other",
    aliases: tuple[str, ...] = (),
    subjects: tuple[str, ...] = (),
    writes: bool = False,
) -> Callable[[ToolFunc], Tool]: ...


def tool(
    func: ToolFunc | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    read_only: bool = False,
    destructive: bool = False,
    timeout: float | None = None,
    category: str = "",
    kind: ToolKind = "other",
    aliases: tuple[str, ...] = (),
    subjects: tuple[str, ...] = (),
    writes: bool = False,
) -> Tool | Callable[[ToolFunc], Tool]:
    """Decorator form of :meth:`Tool.from_function`: bare ``@tool`` or ``@tool(read_only=True)``
    (the overloads let a strict type checker see a :class:`Tool` either way)."""

    def wrap(f: ToolFunc) -> Tool:
        return Tool.from_function(
            f,
            name=name,
            description=description,
            read_only=read_only,
            destructive=destructive,
            timeout=timeout,
            category=category,
            kind=kind,
            aliases=aliases,
            subjects=subjects,
            writes=writes,
        )

    return wrap(func) if func is not None else wrap


# ---------------------------------------------------------------------------------------------
# Schema generation


def _type_schema(tp: Any, where: str) -> dict[str, Any]:
    description: str | None = None
    if get_origin(tp) is Annotated:
        base, *meta = get_args(tp)
        description = next((m for m in meta if isinstance(m, str)), None)
        schema = _type_schema(base, where)
        if description:
            schema["description"] = description
        return schema
    origin = get_origin(tp)
    if tp is str:
        return {"type": "string"}
    if tp is bool:
        return {"type": "boolean"}
    if tp is int:
        return {"type": "integer"}
    if tp is float:
        return {"type": "number"}
    if tp is Any:
        return {}
    if origin is Literal:
        values = list(get_args(tp))
        kinds = {type(v) for v in values}
        enum_schema: dict[str, Any] = {"enum": values}
        if kinds == {str}:
            enum_schema["type"] = "string"
        elif kinds == {int}:
            enum_schema["type"] = "integer"
        return enum_schema
    if origin in (list, tuple, Sequence, typing.Sequence) or tp in (list, tuple):
        args = get_args(tp)
        item = args[0] if args else Any
        return {"type": "array", "items": _type_schema(item, where + "[]")}
    if origin in (dict, Mapping) or tp is dict:
        return {"type": "object"}
    if origin in (Union, types.UnionType):
        members = [a for a in get_args(tp) if a is not type(None)]
        if len(members) == 1:
            return _type_schema(members[0], where)
        return {"anyOf": [_type_schema(a, where) for a in members]}
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _object_schema_from_dataclass(tp, where)
    if isinstance(tp, type) and typing.is_typeddict(tp):
        hints = typing.get_type_hints(tp, include_extras=True)
        required = sorted(getattr(tp, "__required_keys__", set(hints)))
        return {
            "type": "object",
            "properties": {k: _type_schema(v, f"{where}.{k}") for k, v in hints.items()},
            "required": required,
            "additionalProperties": False,
        }
    raise ToolDefinitionError(f"Cannot make a JSON schema for {where}: unsupported type {tp!r}")


def _object_schema_from_dataclass(tp: type, where: str) -> dict[str, Any]:
    hints = typing.get_type_hints(tp, include_extras=True)
    props: dict[str, Any] = {}
    required: list[str] = []
    for f in dataclasses.fields(tp):
        props[f.name] = _type_schema(hints[f.name], f"{where}.{f.name}")
        no_default = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        if no_default:
            required.append(f.name)
    return {
        "type": "object",
        "properties": props,
        "required": required,
        "additionalProperties": False,
    }


def schema_from_signature(func: ToolFunc) -> tuple[dict[str, Any], str | None]:
    """JSON schema of ``func``'s parameters, and the name of its ``ToolContext`` parameter."""
    try:
        hints = typing.get_type_hints(func, include_extras=True)
    except Exception as exc:  # unresolved forward references, etc.
        raise ToolDefinitionError(f"Cannot read type hints of {func!r}: {exc}") from exc
    props: dict[str, Any] = {}
    required: list[str] = []
    ctx_param: str | None = None
    for pname, param in inspect.signature(func).parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ToolDefinitionError(f"{func.__name__}: *args/**kwargs cannot become a schema")
        tp = hints.get(pname)
        if tp is None:
            raise ToolDefinitionError(f"{func.__name__}: parameter {pname!r} needs a type hint")
        if tp is ToolContext:
            ctx_param = pname
            continue
        props[pname] = _type_schema(tp, f"{func.__name__}.{pname}")
        if param.default is inspect.Parameter.empty:
            required.append(pname)
    return (
        {
            "type": "object",
            "properties": props,
            "required": required,
            "additionalProperties": False,
        },
        ctx_param,
    )


# ---------------------------------------------------------------------------------------------
# Validation (the subset of JSON Schema our generated schemas and MCP servers commonly use)


def validate_arguments(schema: Mapping[str, Any], value: Any, path: str = "") -> list[str]:
    """Return human-readable problems; empty when ``value`` satisfies ``schema``."""
    problems: list[str] = []
    where = path or "arguments"
    if "anyOf" in schema or "oneOf" in schema:
        options = schema.get("anyOf") or schema.get("oneOf") or []
        if not any(not validate_arguments(o, value, path) for o in options):
            problems.append(f"{where}: does not match any allowed form")
        return problems
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(json.dumps(v) for v in schema["enum"])
        problems.append(f"{where}: {json.dumps(value)} is not one of {allowed}")
        return problems
    expected = schema.get("type")
    types_ok = {
        "string": lambda v: isinstance(v, str),
        "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
        "boolean": lambda v: isinstance(v, bool),
        "array": lambda v: isinstance(v, list),
        "object": lambda v: isinstance(v, dict),
        "null": lambda v: v is None,
    }
    if isinstance(expected, list):
        if not any(types_ok.get(t, lambda v: True)(value) for t in expected):
            problems.append(f"{where}: expected one of {expected}, got {_json_type(value)}")
            return problems
    elif isinstance(expected, str) and expected in types_ok and not types_ok[expected](value):
        problems.append(f"{where}: expected {expected}, got {_json_type(value)}")
        return problems
    if isinstance(value, dict):
        props: Mapping[str, Any] = schema.get("properties", {})
        for key in schema.get("required", []):
            if key not in value:
                problems.append(f"{where}: missing required property {key!r}")
        for key, item in value.items():
            if key in props:
                problems.extend(validate_arguments(props[key], item, f"{path}.{key}".lstrip(".")))
            elif schema.get("additionalProperties") is False:
                known = ", ".join(sorted(props)) or "none"
                problems.append(f"{where}: unknown property {key!r} (known: {known})")
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for i, item in enumerate(value):
            problems.extend(validate_arguments(schema["items"], item, f"{where}[{i}]"))
    return problems


def drop_null_optionals(schema: Mapping[str, Any], value: Any) -> Any:
    """``value`` without the ``null`` properties that ``schema`` does not require, at any depth.

    Models often send null for an optional argument they mean to leave out (``"risks": null``,
    a plan step's ``"verify": null``): it is treated as left out, so the default applies, rather
    than refused as a type error."""
    if isinstance(value, dict) and isinstance(schema.get("properties"), Mapping):
        props: Mapping[str, Any] = schema["properties"]
        required = schema.get("required", ())
        return {
            k: drop_null_optionals(props.get(k, {}), v)
            for k, v in value.items()
            if v is not None or k in required
        }
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        return [drop_null_optionals(schema["items"], v) for v in value]
    return value


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _coerce(tp: Any, value: Any) -> Any:
    """Turn validated JSON into the callable's declared types (dataclasses, tuples)."""
    if get_origin(tp) is Annotated:
        return _coerce(get_args(tp)[0], value)
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        if value is None:
            return None
        args = [a for a in get_args(tp) if a is not type(None)]
        return _coerce(args[0], value) if len(args) == 1 else value
    if isinstance(tp, type) and dataclasses.is_dataclass(tp) and isinstance(value, dict):
        hints = typing.get_type_hints(tp, include_extras=True)
        return tp(**{k: _coerce(hints[k], v) for k, v in value.items()})
    if origin in (list, Sequence, typing.Sequence) and isinstance(value, list):
        (item,) = get_args(tp) or (Any,)
        return [_coerce(item, v) for v in value]
    if origin is tuple and isinstance(value, list):
        (item, *_rest) = get_args(tp) or (Any,)
        return tuple(_coerce(item, v) for v in value)
    if tp is float and isinstance(value, int):
        return float(value)
    return value


# ---------------------------------------------------------------------------------------------
# Output capping


def cap_output(text: str, limit: int) -> str:
    """Cap tool output at ``limit`` characters, keeping the head and the tail and saying how much
    was cut. Applied once, when the result enters a session."""
    if limit <= 0 or len(text) <= limit:
        return text
    head = int(limit * 0.7)
    tail = limit - head
    cut = len(text) - head - tail
    lines_cut = text.count("\n", head, len(text) - tail)
    note = f"\n[... output capped: {cut} characters ({lines_cut} lines) cut from the middle ...]\n"
    return text[:head] + note + text[len(text) - tail :]


# ---------------------------------------------------------------------------------------------
# Registry


#: The one tool through which deferred tools are listed and called.
DISCOVERY_TOOL_NAME = "more_tools"


def wire_schema(value: Any) -> Any:
    """A schema as sent: without ``additionalProperties: false``, which tells the model
    nothing it needs (arguments are still checked against the full schema) yet is paid for on
    every request, once per object."""
    if isinstance(value, dict):
        return {
            k: wire_schema(v)
            for k, v in value.items()
            if not (k == "additionalProperties" and v is False)
        }
    if isinstance(value, list):
        return [wire_schema(v) for v in value]
    return value


class ToolRegistry:
    """An ordered, immutable-by-convention set of tools.

    Tools are kept sorted by name so schema bytes do not depend on registration order. Build the
    registry before a session starts; adding tools mid-session would change the prefix.
    """

    def __init__(
        self,
        tools: Iterable[Tool] = (),
        *,
        policy: PermissionPolicy | None = None,
        default_timeout: float | None = 120.0,
        limits: ToolLimits = DEFAULT_LIMITS,
        _slots: ConcurrencySlots | None = None,
    ) -> None:
        self._tools: dict[str, Tool] = {}
        self.policy = policy
        self.default_timeout = default_timeout
        #: bounds on what one model response may ask (see :mod:`reasonix.tools.limits`)
        self.limits = limits
        # Views (read_only, with_tools) share one set of slots: the bound is per host.
        self._slots = _slots or ConcurrencySlots(limits.max_concurrent_tools)
        self._schemas_cache: tuple[dict[str, Any], ...] | None = None
        self._schema_bytes_cache: str | None = None
        #: tools that run when called but whose schemas are not sent (see :meth:`defer`)
        self.deferred: frozenset[str] = frozenset()
        for t in tools:
            self.add(t)

    # -- building ------------------------------------------------------------------------------

    def add(self, item: Tool | ToolFunc) -> Tool:
        t = item if isinstance(item, Tool) else Tool.from_function(item)
        if t.name in self._tools:
            raise ToolDefinitionError(f"Duplicate tool name {t.name!r}")
        self._tools[t.name] = t
        self._tools = dict(sorted(self._tools.items()))
        self._schemas_cache = None
        self._schema_bytes_cache = None
        return t

    def extend(self, tools: Iterable[Tool | ToolFunc]) -> ToolRegistry:
        for t in tools:
            self.add(t)
        return self

    @classmethod
    def default(cls, workdir: str | Path, **kwargs: Any) -> ToolRegistry:
        """The built-in coding tools confined to ``workdir`` (the seed's
        ``ToolRegistry.default(workdir)``); ``kwargs`` as for the constructor. The built-ins
        live above the safety layer, which this contract sits below, so they are found by name
        when called (:func:`reasonix.tools.builtin.default_registry`), never imported here."""
        builtin = importlib.import_module("reasonix.tools.builtin")
        registry: ToolRegistry = builtin.default_registry(workdir, **kwargs)
        return registry

    def read_only(self) -> ToolRegistry:
        """The filtered view (same policy) the planner uses."""
        return ToolRegistry(
            (t for t in self._tools.values() if t.read_only),
            policy=self.policy,
            default_timeout=self.default_timeout,
            limits=self.limits,
            _slots=self._slots,
        )

    def with_tools(self, extra: Iterable[Tool | ToolFunc]) -> ToolRegistry:
        """A new registry with these tools plus ``extra``."""
        reg = ToolRegistry(
            self._tools.values(),
            policy=self.policy,
            default_timeout=self.default_timeout,
            limits=self.limits,
            _slots=self._slots,
        )
        reg.deferred = self.deferred
        return reg.extend(extra)

    def defer(self, names: Iterable[str]) -> ToolRegistry:
        """A new registry whose tools named in ``names`` (those present) are not sent to the
        model but reached through one discovery tool, ``more_tools`` (see
        :mod:`reasonix.tools.deferred`); unchanged when none of them is here."""
        from reasonix.tools.deferred import discovery_tool

        hidden = frozenset(n for n in names if n in self._tools) | self.deferred
        if not hidden or hidden == self.deferred:
            return self
        reg = ToolRegistry(
            (t for t in self._tools.values() if t.name != DISCOVERY_TOOL_NAME),
            policy=self.policy,
            default_timeout=self.default_timeout,
            limits=self.limits,
            _slots=self._slots,
        )
        reg.deferred = hidden
        reg.add(discovery_tool(reg))
        return reg

    def close(self) -> None:
        """End what the tools hold between calls (see :attr:`Tool.close`): the host calls it
        when the session that built this registry closes. Every tool's hook runs (one that
        fails does not keep the others open); the first failure is raised afterwards."""
        failure: Exception | None = None
        for t in self._tools.values():
            if t.close is None:
                continue
            try:
                t.close()
            except Exception as exc:  # each hook runs; the first failure is raised after
                failure = failure or exc
        if failure is not None:
            raise failure

    # -- reading -------------------------------------------------------------------------------

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def acting_tool(self, name: str, arguments: str) -> Tool | None:
        """The tool a call really runs: for ``more_tools`` with a deferred tool's ``name``,
        that tool (so whether the call only reads is the dispatched tool's), else ``name``'s."""
        if name == DISCOVERY_TOOL_NAME and self.deferred:
            try:
                target = json.loads(arguments or "{}").get("name")
            except (ValueError, AttributeError):
                target = None
            if isinstance(target, str) and target in self.deferred:
                return self._tools.get(target)
        return self._tools.get(name)

    def call_identity(self, name: str, arguments: str) -> tuple[ToolKind, str]:
        """A call's kind and subject as frontends show them (:attr:`Tool.kind`,
        :meth:`Tool.subject_text`), of the tool it really runs (through ``more_tools`` too);
        ``("other", "")`` for an unknown tool or arguments that are not a JSON object."""
        tool = self.acting_tool(name, arguments)
        if tool is None:
            return "other", ""
        try:
            args = json.loads(arguments or "{}")
        except ValueError:
            return tool.kind, ""
        if not isinstance(args, dict):
            return tool.kind, ""
        if tool.name != name and isinstance(args.get("arguments"), dict):
            args = args["arguments"]
        return tool.kind, tool.subject_text(args)

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def schemas(self) -> tuple[dict[str, Any], ...]:
        if self._schemas_cache is None:
            # Round-trip through canonical JSON so key order is stable whatever the source.
            self._schemas_cache = tuple(
                json.loads(canonical_json(wire_schema(t.schema())))
                for t in self._tools.values()
                if t.name not in self.deferred
            )
        return self._schemas_cache

    def schema_bytes(self) -> str:
        """The canonical bytes of all schemas (what prefix tracking hashes); cached."""
        if self._schema_bytes_cache is None:
            self._schema_bytes_cache = canonical_json(list(self.schemas()))
        return self._schema_bytes_cache

    # -- running -------------------------------------------------------------------------------

    async def execute(self, name: str, arguments: str, ctx: ToolContext) -> ToolResult:
        """Parse, validate, check permission, run. Never raises for the model's mistakes."""
        t = self._tools.get(name)
        if t is None:
            known = ", ".join(self._tools) or "(none)"
            return ToolResult.error(f"Unknown tool {name!r}. Available tools: {known}.")
        try:
            args = parse_arguments(name, arguments, self.limits, edits=t.kind == "edit")
        except ArgumentsRejected as exc:
            return ToolResult.error(str(exc))
        if not isinstance(args, dict):
            return ToolResult.error(
                f"The arguments for {name} must be a JSON object, got {_json_type(args)}."
            )
        args = drop_null_optionals(t.parameters, args)
        problems = validate_arguments(t.parameters, args)
        if problems:
            return ToolResult.error(
                f"Invalid arguments for {name}: " + "; ".join(problems[:8]) + ". Fix and retry."
            )
        if self.policy is not None:
            if t.preview is not None:
                # Validate before anyone is asked: an edit that cannot apply is not asked about.
                shown = await asyncio.to_thread(t.preview, args, ctx)
                if shown.is_error:
                    return shown
                ctx = dataclasses.replace(ctx, preview=shown.content, preview_cut=shown.cut)
            decision = await self.policy.check(t, args, ctx)
            if not decision.allowed:
                return ToolResult.refused_by(name, decision)
            policy, asked = self.policy, dataclasses.replace(ctx, preview="", preview_cut=False)

            async def recheck(other: Mapping[str, Any]) -> PermissionDecision:
                return await policy.check(t, other, asked)

            ctx = dataclasses.replace(ctx, recheck=recheck)
        return await self._run(t, args, ctx)

    async def _run(self, t: Tool, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        hints = _hints(t.func)
        kwargs = {k: _coerce(hints.get(k, Any), v) for k, v in args.items()}
        if t.context_param:
            kwargs[t.context_param] = ctx
        timeout = t.timeout if t.timeout is not None else self.default_timeout
        try:
            async with self._slots.slot():
                if inspect.iscoroutinefunction(t.func):
                    coro: Awaitable[Any] = t.func(**kwargs)
                else:
                    coro = asyncio.to_thread(t.func, **kwargs)
                out = await asyncio.wait_for(coro, timeout) if timeout else await coro
        except TimeoutError:
            return ToolResult.error(f"{t.name} timed out after {timeout:g} s and was stopped.")
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            return ToolResult.error(f"{t.name} failed: {type(exc).__name__}: {exc}")
        return _as_result(t.name, args, out)


_HINTS: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()


def _hints(func: ToolFunc) -> dict[str, Any]:
    """Type hints of a tool function, resolved once (they are needed on every call)."""
    key = getattr(func, "__func__", func)
    found = _HINTS.get(key)
    if found is None:
        found = _HINTS[key] = typing.get_type_hints(func, include_extras=True)
    return found


def _as_result(name: str, args: Mapping[str, Any], out: Any) -> ToolResult:
    if isinstance(out, ToolResult):
        result = out
    elif isinstance(out, str):
        result = ToolResult(out)
    elif out is None:
        result = ToolResult("(no output)")
    else:
        try:
            result = ToolResult(json.dumps(out, ensure_ascii=False, default=str))
        except (TypeError, ValueError):
            result = ToolResult(str(out))
    if not result.effects and not result.is_error:
        # Any successful call is an observation; its digest makes repeats recognisable.
        import hashlib

        digest = hashlib.sha256(result.content.encode()).hexdigest()[:16]
        target = f"{name}:{canonical_json(dict(args))}"
        result = dataclasses.replace(result, effects=(Effect("call", target, digest),))
    return result
