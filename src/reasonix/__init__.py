"""reasonix: a DeepSeek-native coding agent with a cheap executor and an on-demand planner.

Public names are imported lazily so that ``import reasonix`` (and ``reasonix --version``) stays
fast; heavy dependencies load only when used.
"""

from __future__ import annotations

import importlib
from typing import Any

from reasonix._version import __version__

_LAZY = {
    "Agent": "reasonix.agent.agent",
    "AgentOptions": "reasonix.agent.agent",
    "Session": "reasonix.agent.session",
    "TodoItem": "reasonix.agent.todo",
    "TodoState": "reasonix.agent.todo",
    "Controller": "reasonix.control.controller",
    "Options": "reasonix.control.controller",
    "UsageSource": "reasonix.events",
    "Tool": "reasonix.tools.registry",
    "ToolRegistry": "reasonix.tools.registry",
    "tool": "reasonix.tools.registry",
}

__all__ = ["__version__", *sorted(_LAZY)]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'reasonix' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
