"""Tools: the registry contract (``reasonix.tools.registry``) and built-in implementations.

Names load lazily, so a module that needs only a light part (``reasonix.tools.limits`` for the
terminal renderer) does not pull in the registry with the package."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'reasonix.tools' has no attribute {name!r}")
    return getattr(importlib.import_module("reasonix.tools.registry"), name)


def __dir__() -> list[str]:
    return sorted(__all__)
