"""The application layer every frontend stands on: the session façade
(:class:`AgentSession`, :mod:`reasonix.app.session`), assembly of its parts from configuration
(:mod:`reasonix.app.assembly`), and its persistence (:mod:`reasonix.app.persistence`).

Names are imported lazily, so importing this package costs nothing until one is used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from reasonix.app.approvals import (
        ApprovalAnswered,
        ApprovalChoice,
        ApprovalRequested,
        PlanApprovalRequested,
    )
    from reasonix.app.persistence import TurnMark
    from reasonix.app.session import AgentSession, ContextUse
    from reasonix.app.turn import Turn, TurnOutcome

_LAZY = {
    "AgentSession": "reasonix.app.session",
    "ApprovalAnswered": "reasonix.app.approvals",
    "ApprovalChoice": "reasonix.app.approvals",
    "ApprovalRequested": "reasonix.app.approvals",
    "ContextUse": "reasonix.app.session",
    "PlanApprovalRequested": "reasonix.app.approvals",
    "Turn": "reasonix.app.turn",
    "TurnMark": "reasonix.app.persistence",
    "TurnOutcome": "reasonix.app.turn",
}

__all__ = [
    "AgentSession",
    "ApprovalAnswered",
    "ApprovalChoice",
    "ApprovalRequested",
    "ContextUse",
    "PlanApprovalRequested",
    "Turn",
    "TurnMark",
    "TurnOutcome",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'reasonix.app' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
