"""Tools: the registry contract (``reasonix.tools.registry``) and built-in implementations."""

from reasonix.tools.registry import (
    Effect,
    Permission,
    PermissionDecision,
    PermissionPolicy,
    Tool,
    ToolContext,
    ToolRegistry,
    ToolResult,
    tool,
)

__all__ = [
    "Effect",
    "Permission",
    "PermissionDecision",
    "PermissionPolicy",
    "Tool",
    "ToolContext",
    "ToolRegistry",
    "ToolResult",
    "tool",
]
