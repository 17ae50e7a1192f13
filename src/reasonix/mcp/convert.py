"""Pure conversions between MCP's wire shapes and reasonix's tool contract.

Tool names, input schemas and call results, all on plain JSON data (``model_dump`` output), so
this module never imports the MCP SDK and is tested without a server.
"""

from __future__ import annotations

import base64
import binascii
import copy
import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reasonix.tools.registry import ToolKind, ToolResult

_BAD_CHARS = re.compile(r"[^a-zA-Z0-9_-]")
MAX_TOOL_NAME = 64
PREFIX = "mcp"

# Schema keywords that only annotate: the model gets nothing from them that the property name
# and description do not already say, and every byte is resent on every request.
_DROP_KEYS = frozenset({"$schema", "$id", "$comment", "title"})
# Keywords whose values are data (the tool's own values), not schemas: kept as they are.
_DATA_KEYS = frozenset({"default", "examples", "example", "const", "enum"})
# Keywords whose value is a list of schemas, each of which may be a boolean schema.
_SCHEMA_LISTS = frozenset({"anyOf", "oneOf", "allOf", "prefixItems"})


# ---------------------------------------------------------------------------------------------
# Names


def _short_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def tool_name(server: str, tool: str) -> str:
    """``mcp__<server>__<tool>`` made safe for DeepSeek: characters outside ``[a-zA-Z0-9_-]`` become
    ``_``; a name over 64 characters is cut and ends in a hash of the full name, so two long
    names that share a prefix stay distinct."""
    raw = f"{PREFIX}__{server}__{tool}"
    safe = _BAD_CHARS.sub("_", raw)
    if len(safe) <= MAX_TOOL_NAME:
        # Replaced characters may make two names collide; assign_names settles that.
        return safe
    suffix = "_" + _short_hash(raw)
    return safe[: MAX_TOOL_NAME - len(suffix)] + suffix


def assign_names(pairs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """Model-facing names for ``(server, tool)`` pairs, unique and independent of input order.

    Two pairs that sanitise to the same name (``a.b`` and ``a_b``) both get a hash suffix of
    their original spelling, so neither depends on which was seen first.
    """
    ordered = sorted(set(pairs))
    first = {pair: tool_name(*pair) for pair in ordered}
    counts: dict[str, int] = {}
    for name in first.values():
        counts[name] = counts.get(name, 0) + 1
    out: dict[tuple[str, str], str] = {}
    for pair, name in first.items():
        if counts[name] > 1:
            suffix = "_" + _short_hash(f"{pair[0]}\x00{pair[1]}")
            name = name[: MAX_TOOL_NAME - len(suffix)] + suffix
        out[pair] = name
    return out


# ---------------------------------------------------------------------------------------------
# Schemas


@dataclass(frozen=True, slots=True)
class McpIdentity:
    """What an MCP tool is, from its server's annotations (the fields of
    :class:`~reasonix.tools.registry.Tool` that say it)."""

    read_only: bool
    destructive: bool
    kind: ToolKind
    writes: bool


def identity_from_annotations(annotations: Mapping[str, Any], *, trusted: bool) -> McpIdentity:
    """An MCP tool's identity from its ``annotations``. They are the server's claims: a
    read-only hint skips approval (and passes plan mode) only for a server the user said to
    trust (``trusted``); what an editor shows (``kind``) follows the hints either way. The MCP
    spec's defaults apply: ``destructiveHint`` true, ``openWorldHint`` true, and a destructive
    hint only means something for a tool that is not read-only."""
    hinted_read_only = annotations.get("readOnlyHint") is True
    read_only = trusted and hinted_read_only
    # Unless trusted, a tool may change what it likes: it counts as writing.
    destructive = not read_only and annotations.get("destructiveHint", True) is not False
    kind: ToolKind = "other"
    if hinted_read_only:
        kind = "fetch" if annotations.get("openWorldHint") is True else "read"
    return McpIdentity(read_only, destructive, kind, writes=destructive)


def normalize_schema(schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """An MCP ``inputSchema`` made into the function-parameters schema the model gets.

    - the top level is ``{"type": "object", "properties": {...}}`` whatever the server sent;
    - ``$schema``, ``$id``, ``$comment`` and ``title`` annotations are dropped;
    - local references (``#/$defs/X``, ``#/definitions/X``) are inlined and the definitions
      removed; a recursive reference is replaced by an unconstrained ``{}`` (its description
      kept), and an unresolvable one likewise;
    - boolean subschemas become ``{}`` / ``{"not": {}}``; data (``default``, ``enum``, ``const``,
      ``examples``) is left as the server wrote it;
    - keys are sorted, so the same input always gives the same bytes.
    """
    root: dict[str, Any] = copy.deepcopy(dict(schema)) if isinstance(schema, Mapping) else {}
    defs: dict[str, Any] = {}
    for key in ("$defs", "definitions"):
        table = root.pop(key, None)
        if isinstance(table, Mapping):
            for name, value in table.items():
                defs[f"#/{key}/{name}"] = value
    out = _resolve(root, defs, ())
    if not isinstance(out, dict):
        out = {}
    if out.get("type") != "object":
        out["type"] = "object"
    props = out.get("properties")
    if not isinstance(props, dict):
        out["properties"] = {}
    req = out.get("required")
    if req is not None and not (isinstance(req, list) and all(isinstance(r, str) for r in req)):
        del out["required"]
    sorted_out = _sort_keys(out)
    assert isinstance(sorted_out, dict)
    return sorted_out


def _resolve(node: Any, defs: Mapping[str, Any], stack: tuple[str, ...]) -> Any:
    if isinstance(node, list):
        return [_resolve(v, defs, stack) for v in node]
    if not isinstance(node, Mapping):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str):
        siblings = _resolve({k: v for k, v in node.items() if k != "$ref"}, defs, stack)
        target = defs.get(ref)
        if target is None or ref in stack:
            # Recursive or not local: leave the value unconstrained rather than send a
            # reference the model (and our validator) cannot follow.
            return siblings
        resolved = _resolve(target, defs, (*stack, ref))
        if isinstance(resolved, dict):
            return {**resolved, **siblings}
        return siblings
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("$defs", "definitions"):
            continue
        if key == "properties" and isinstance(value, Mapping):
            # Property *names* may be anything (even "title"); only their schemas are resolved.
            out[key] = {str(k): _subschema(v, defs, stack) for k, v in value.items()}
        elif key in _DROP_KEYS:
            continue
        elif key in _DATA_KEYS:
            out[key] = value
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [_subschema(v, defs, stack) for v in value]
        else:
            out[key] = _resolve(value, defs, stack)
    return out


def _subschema(node: Any, defs: Mapping[str, Any], stack: tuple[str, ...]) -> Any:
    """A subschema resolved, with the boolean schemas ``true``/``false`` spelled as objects
    (``{}``/``{"not": {}}``): our argument validator, like many, reads only objects."""
    if node is True:
        return {}
    if node is False:
        return {"not": {}}
    return _resolve(node, defs, stack)


def _sort_keys(node: Any) -> Any:
    if isinstance(node, Mapping):
        return {k: _sort_keys(node[k]) for k in sorted(node)}
    if isinstance(node, list):
        return [_sort_keys(v) for v in node]
    return node


# ---------------------------------------------------------------------------------------------
# Results


def _b64_size(data: Any) -> int:
    if not isinstance(data, str):
        return 0
    try:
        return len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError):
        return len(data) * 3 // 4


def _part_text(part: Mapping[str, Any]) -> str:
    kind = part.get("type")
    if kind == "text":
        return str(part.get("text", ""))
    if kind in ("image", "audio"):
        mime = part.get("mimeType") or "application/octet-stream"
        return f"[{kind}: {mime}, {_b64_size(part.get('data'))} bytes]"
    if kind == "resource":
        res = part.get("resource")
        if not isinstance(res, Mapping):
            return "[resource]"
        uri = res.get("uri", "")
        mime = res.get("mimeType")
        if "text" in res:
            head = f"[resource: {uri}" + (f" ({mime})" if mime else "") + "]"
            return f"{head}\n{res.get('text', '')}"
        size = _b64_size(res.get("blob"))
        return f"[resource: {uri}, {mime or 'application/octet-stream'}, {size} bytes]"
    if kind == "resource_link":
        uri = part.get("uri", "")
        bits = [str(part.get("name") or uri)]
        if part.get("name") and uri:
            bits.append(f"<{uri}>")
        if part.get("mimeType"):
            bits.append(f"({part['mimeType']})")
        text = "[resource link: " + " ".join(bits) + "]"
        if part.get("description"):
            text += f" {part['description']}"
        return text
    return f"[unsupported content part: {kind}]"


def _texts_carry(texts: Sequence[str], structured: Any) -> bool:
    """Whether some text part already says what ``structuredContent`` says (servers are asked
    to mirror structured output as JSON text; sending it twice would waste tokens)."""
    # Servers built on the Python SDK wrap a plain return value as {"result": value}.
    wrapped = (
        structured["result"]
        if isinstance(structured, Mapping) and set(structured) == {"result"}
        else None
    )
    for t in texts:
        if wrapped is not None and t == (wrapped if isinstance(wrapped, str) else None):
            return True
        try:
            decoded = json.loads(t)
        except (json.JSONDecodeError, ValueError):
            continue
        if decoded == structured or (wrapped is not None and decoded == wrapped):
            return True
    return False


def result_to_tool_result(result: Mapping[str, Any]) -> ToolResult:
    """Map a ``tools/call`` result (wire JSON, camelCase) into a :class:`ToolResult`.

    Content parts are rendered in order, separated by blank lines: text as is; images and audio
    described (``[image: image/png, 1234 bytes]``); embedded text resources inline under their URI;
    blobs described; resource links as ``[resource link: name <uri>]``. ``structuredContent`` is
    appended as JSON unless a text part already carries the same data. ``isError`` makes an error
    result the model sees as such.
    """
    parts = result.get("content") or []
    rendered: list[str] = []
    texts: list[str] = []
    for part in parts:
        if isinstance(part, Mapping):
            rendered.append(_part_text(part))
            if part.get("type") == "text":
                texts.append(str(part.get("text", "")))
    structured = result.get("structuredContent")
    if structured is not None and not _texts_carry(texts, structured):
        rendered.append(json.dumps(structured, ensure_ascii=False, sort_keys=True))
    text = "\n\n".join(r for r in rendered if r != "") or "(no output)"
    return ToolResult(text, is_error=bool(result.get("isError")))
