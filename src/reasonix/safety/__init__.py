"""Safety: the workspace sandbox, permission rules and approval modes, snapshots of each step.

Names load lazily: ``reasonix.safety.confinement`` (the bwrap probe the interactive app starts
before its prompt) must not pull in snapshots and the permission engine with the package."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from reasonix.safety.checkpoints import CheckpointManager, RewindResult, Step
    from reasonix.safety.permissions import (
        ApprovalAnswer,
        ApprovalRequest,
        Approver,
        Mode,
        PermissionEngine,
        PermissionRecord,
        Rule,
    )
    from reasonix.safety.sandbox import DEFAULT_READ_DENY, DEFAULT_WRITE_DENY, Sandbox

_LAZY = {
    "DEFAULT_READ_DENY": "reasonix.safety.sandbox",
    "DEFAULT_WRITE_DENY": "reasonix.safety.sandbox",
    "ApprovalAnswer": "reasonix.safety.permissions",
    "ApprovalRequest": "reasonix.safety.permissions",
    "Approver": "reasonix.safety.permissions",
    "CheckpointManager": "reasonix.safety.checkpoints",
    "Mode": "reasonix.safety.permissions",
    "PermissionEngine": "reasonix.safety.permissions",
    "PermissionRecord": "reasonix.safety.permissions",
    "RewindResult": "reasonix.safety.checkpoints",
    "Rule": "reasonix.safety.permissions",
    "Sandbox": "reasonix.safety.sandbox",
    "Step": "reasonix.safety.checkpoints",
}

__all__ = [
    "DEFAULT_READ_DENY",
    "DEFAULT_WRITE_DENY",
    "ApprovalAnswer",
    "ApprovalRequest",
    "Approver",
    "CheckpointManager",
    "Mode",
    "PermissionEngine",
    "PermissionRecord",
    "RewindResult",
    "Rule",
    "Sandbox",
    "Step",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'reasonix.safety' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted(__all__)
