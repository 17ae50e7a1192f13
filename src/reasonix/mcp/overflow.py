"""Keeping a session's tools within DeepSeek's limit of 128 functions per request.

Built-in tools plus the tools of a few MCP servers can pass 128, and DeepSeek answers every such
request with 400. When they would, the built-in tools and as many MCP tools as fit are sent as
they are, and the rest stay callable through three proxy tools whose schemas never change:

- ``mcp_tools`` lists the MCP tools reached through the proxies (name, description, parameters,
  read-only or not), optionally filtered by a search string;
- ``mcp_read`` calls a read-only one by name with its arguments (itself read-only, so the
  planner's and subagents' read-only tool sets keep it);
- ``mcp_call`` calls any of them (not read-only: read-only tool sets leave it out, and it needs
  the approval a writer tool needs).

A call through a proxy goes through a registry of the routed tools with the session's own
permission policy, so the tool's argument validation, permission rules (by its own name and
category), approvals and timeout apply as for a tool sent directly (a writer reached through
``mcp_call`` in ``ask`` mode is approved twice: the proxy call, then the tool). The split is made
once, from the session's tool snapshot, so the schema bytes stay fixed for the session.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from reasonix.tools.registry import PermissionPolicy, Tool, ToolContext, ToolRegistry, ToolResult

__all__ = [
    "MAX_REQUEST_TOOLS",
    "PROXY_CALL",
    "PROXY_LIST",
    "PROXY_READ",
    "McpRoute",
    "ToolFit",
    "fit_mcp_tools",
    "overflow_notice",
    "registry_overflow_notice",
]

#: DeepSeek's documented limit of functions per request.
MAX_REQUEST_TOOLS = 128
PROXY_CALL = "mcp_call"
PROXY_READ = "mcp_read"
PROXY_LIST = "mcp_tools"
#: How many proxy tools an overflowing session adds.
PROXY_COUNT = 3
_LIST_LIMIT = 40


class McpRoute:
    """The MCP tools not sent directly, and the two proxy tools that reach them."""

    def __init__(self, routed: Sequence[Tool], policy: PermissionPolicy | None) -> None:
        self.routed = tuple(routed)
        self._registry = ToolRegistry(self.routed, policy=policy)

    def proxies(self) -> tuple[Tool, Tool, Tool]:
        listing = Tool(
            name=PROXY_LIST,
            description=(
                f"List the {len(self.routed)} MCP tools that are not offered directly (the "
                "request limit is 128 tools): name, description and JSON parameters of each. "
                "Pass `search` to filter by words in the name or description. Call a read-only "
                f"one with {PROXY_READ}, any one with {PROXY_CALL}."
            ),
            parameters={
                "type": "object",
                "properties": {
                    "search": {
                        "type": "string",
                        "description": "only tools whose name or description contains this",
                    }
                },
            },
            func=self.list_tools,
            read_only=True,
            category="mcp",
            kind="search",
        )
        params = {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "the tool's name"},
                "arguments": {
                    "type": "object",
                    "description": "the tool's arguments, matching its parameters",
                },
            },
            "required": ["name"],
        }
        read = Tool(
            name=PROXY_READ,
            description=(
                f"Call a read-only MCP tool listed by {PROXY_LIST} by its name, with its "
                "arguments as a JSON object."
            ),
            parameters=params,
            func=self.call_read_only,
            # The routed tool's own permission check happens inside; this proxy only
            # dispatches, and only to read-only tools.
            read_only=True,
            context_param="ctx",
            category="mcp",
        )
        call = Tool(
            name=PROXY_CALL,
            description=(
                f"Call any MCP tool listed by {PROXY_LIST} by its name, with its arguments as a "
                "JSON object. Its own permission rules and approvals apply."
            ),
            parameters=params,
            func=self.call,
            context_param="ctx",
            category="mcp",
        )
        return listing, read, call

    def list_tools(self, search: str = "") -> str:
        words = search.lower().split()
        found = [
            t for t in self.routed if all(w in f"{t.name} {t.description}".lower() for w in words)
        ]
        lines = [
            f"{t.name}{' (read-only)' if t.read_only else ''}: {t.description}\n"
            f"  parameters: {json.dumps(t.parameters, sort_keys=True)}"
            for t in found[:_LIST_LIMIT]
        ]
        more = len(found) - len(lines)
        head = f"{len(found)} MCP tool(s)" + (f" matching {search!r}" if search else "")
        tail = f"\n... and {more} more: narrow the search." if more > 0 else ""
        return head + ":\n" + "\n".join(lines) + tail if lines else head + "."

    async def call(
        self, name: str, arguments: dict[str, Any] | None = None, *, ctx: ToolContext
    ) -> ToolResult:
        if name not in self._registry:
            return ToolResult.error(
                f"No MCP tool named {name!r} behind {PROXY_CALL}; list them with {PROXY_LIST}."
            )
        return await self._registry.execute(name, json.dumps(arguments or {}), ctx)

    async def call_read_only(
        self, name: str, arguments: dict[str, Any] | None = None, *, ctx: ToolContext
    ) -> ToolResult:
        tool = self._registry.get(name)
        if tool is not None and not tool.read_only:
            return ToolResult.error(
                f"{name} is not a read-only tool: {PROXY_READ} calls only read-only tools "
                f"(use {PROXY_CALL} where changes are allowed)."
            )
        return await self.call(name, arguments, ctx=ctx)


@dataclass(frozen=True, slots=True)
class ToolFit:
    """The MCP tools to add to a registry (``tools``), and how the limit was kept."""

    tools: tuple[Tool, ...]
    direct: int
    routed: int
    total: int

    @property
    def overflowed(self) -> bool:
        return self.routed > 0


def fit_mcp_tools(
    builtin_count: int,
    mcp_tools: Sequence[Tool],
    policy: PermissionPolicy | None = None,
    limit: int = MAX_REQUEST_TOOLS,
) -> ToolFit:
    """The MCP tools for a session with ``builtin_count`` other tools: all of them when the
    total fits ``limit``; otherwise the first that fit (in snapshot order) plus the proxies
    reaching the rest."""
    total = builtin_count + len(mcp_tools)
    if total <= limit:
        return ToolFit(tuple(mcp_tools), len(mcp_tools), 0, total)
    room = max(0, limit - builtin_count - PROXY_COUNT)
    direct, routed = tuple(mcp_tools[:room]), tuple(mcp_tools[room:])
    route = McpRoute(routed, policy)
    return ToolFit((*direct, *route.proxies()), len(direct), len(routed), total)


def overflow_notice(fit: ToolFit, limit: int = MAX_REQUEST_TOOLS) -> str | None:
    """What start-up and ``reasonix doctor`` say when the tools passed the limit."""
    if not fit.overflowed:
        return None
    mcp = fit.direct + fit.routed
    return (
        f"{mcp} MCP tools and the built-in tools are more than the {limit} a DeepSeek request "
        f"may carry: {fit.direct} MCP tools are offered directly and the other {fit.routed} "
        f"through {PROXY_LIST} / {PROXY_READ} / {PROXY_CALL}."
    )


def registry_overflow_notice(registry: ToolRegistry) -> str | None:
    """:func:`overflow_notice` for a registry built with :func:`fit_mcp_tools`."""
    listing = registry.get(PROXY_LIST)
    route = getattr(listing.func, "__self__", None) if listing is not None else None
    if not isinstance(route, McpRoute):
        return None
    direct = sum(1 for t in registry if t.category == "mcp") - 2
    return overflow_notice(
        ToolFit((), direct, len(route.routed), len(registry) + len(route.routed))
    )
