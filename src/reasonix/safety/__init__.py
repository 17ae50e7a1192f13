"""Safety: the workspace sandbox, permission rules and approval modes, per-turn checkpoints."""

from reasonix.safety.checkpoints import CheckpointManager, FileCheckpoint, RewindResult
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
    "FileCheckpoint",
    "Mode",
    "PermissionEngine",
    "PermissionRecord",
    "RewindResult",
    "Rule",
    "Sandbox",
]
