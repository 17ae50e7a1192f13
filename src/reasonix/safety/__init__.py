"""Safety: the workspace sandbox, permission rules and approval modes, snapshots of each step."""

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
