"""Rarely used tools behind one discovery tool, so their schemas are paid for only when used.

Every tool schema is part of the prefix every request carries. Tools most turns never use (web
pages and searches, deleting files, background jobs, applying a writer subagent's patch) are
kept out of the ``tools`` list and reached through ``more_tools``, whose schema names them and
never changes within a session (the set is fixed when the session's tools are built):

- ``more_tools()`` lists them: name, description and JSON parameters, as a tool result, so
  their schemas enter the conversation at its tail, once, when the model needs them;
- ``more_tools(name=..., arguments={...})`` calls one. The call goes through the session's own
  registry, so the tool's argument checks, permission rules (by its own name and category),
  approvals, hooks and timeout apply as for a tool sent directly.

A deferred tool called by its own name still runs (a model that read the listing may do so).
The proxy itself asks nothing: it only dispatches, and the dispatched tool's own check decides.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from reasonix.tools.registry import (
    DISCOVERY_TOOL_NAME,
    Tool,
    ToolContext,
    ToolResult,
    wire_schema,
)

if TYPE_CHECKING:
    from reasonix.tools.registry import ToolRegistry

__all__ = ["DEFERRED_TOOLS", "DISCOVERY_TOOL_NAME", "discovery_tool"]

#: The executor's tools reached through ``more_tools`` (those present in a session).
DEFERRED_TOOLS = ("web_fetch", "web_search", "delete_file", "job", "task_apply")


def discovery_tool(registry: ToolRegistry) -> Tool:
    """``more_tools`` over ``registry``'s deferred tools."""
    names = sorted(registry.deferred)

    def listing() -> str:
        lines = []
        for name in names:
            t = registry.get(name)
            if t is not None:
                params = json.dumps(wire_schema(t.parameters), sort_keys=True)
                lines.append(f"{name}: {t.description}\n  parameters: {params}")
        return "\n".join(lines)

    async def more_tools(
        ctx: ToolContext, name: str = "", arguments: dict[str, Any] | None = None
    ) -> ToolResult:
        if not name:
            return ToolResult(listing())
        if name not in registry.deferred:
            return ToolResult.error(f"{name!r} is not one of {', '.join(names)}.")
        return await registry.execute(name, json.dumps(arguments or {}), ctx)

    return Tool(
        name=DISCOVERY_TOOL_NAME,
        description=(
            f"More tools: {', '.join(names)}. Call with no name to get their parameters; with "
            "name and arguments to run one."
        ),
        parameters={
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "arguments": {"type": "object"},
            },
        },
        func=more_tools,
        # Dispatch only: the tool it runs is checked (and approved) by its own rules.
        read_only=True,
        context_param="ctx",
        category="tools",
    )
