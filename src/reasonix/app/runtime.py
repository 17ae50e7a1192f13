"""The names frontends imported before the session façade existed, kept so code written
against them keeps working: ``Runtime`` is :class:`~reasonix.app.session.AgentSession`.

New code imports from :mod:`reasonix.app` (or the modules below it): the façade from
:mod:`~reasonix.app.session`, assembly from :mod:`~reasonix.app.assembly`, persistence from
:mod:`~reasonix.app.persistence`.
"""

from __future__ import annotations

from reasonix.app.assembly import effort_options, mcp_entries, mcp_server_configs
from reasonix.app.persistence import (
    TurnMark,
    TurnMarked,
    TurnMarksReset,
    load_marks,
    remap_marks,
    repair_messages,
)
from reasonix.app.session import AgentSession, ContextUse
from reasonix.app.turn import TurnOutcome

Runtime = AgentSession

__all__ = [
    "ContextUse",
    "Runtime",
    "TurnMark",
    "TurnMarked",
    "TurnMarksReset",
    "TurnOutcome",
    "effort_options",
    "load_marks",
    "mcp_entries",
    "mcp_server_configs",
    "remap_marks",
    "repair_messages",
]
