"""Repairs of a stored session so it can be continued under DeepSeek's reasoning rule.

A release before the rule was known stored assistant messages without ``reasoning_content``
(final answers whose reasoning came back empty, the host's own notes, every turn of a role run
with thinking off) and sent the reasoning only on tool-call turns. With tools in the request and
thinking on, DeepSeek now answers such a history with 400. On load, every assistant message that
lacks the field gets ``""``; that changes bytes already sent, so it is done once, as a planned
break of the prefix (:meth:`Session.rewrite`, which the store mirrors, so the next load finds
nothing to repair), and reported with a :class:`~reasonix.events.SessionRepaired` event.
"""

from __future__ import annotations

from reasonix.agent.session import Session
from reasonix.events import SessionRepaired
from reasonix.messages import AssistantMessage, with_reasoning

__all__ = ["REASONING_REPAIR", "missing_reasoning", "repair_reasoning"]

#: The rewrite reason recorded for this repair.
REASONING_REPAIR = "reasoning_repair"


def missing_reasoning(session: Session) -> list[int]:
    """Indexes of the assistant messages stored without a ``reasoning_content``."""
    return [
        i
        for i, m in enumerate(session.snapshot())
        if isinstance(m, AssistantMessage) and m.reasoning_content is None
    ]


def repair_reasoning(session: Session, role: str) -> SessionRepaired | None:
    """Give every assistant message of ``session`` a reasoning field (a planned prefix break);
    the event that reports it, or None when nothing needed repair."""
    indexes = missing_reasoning(session)
    if not indexes:
        return None
    session.rewrite([with_reasoning(m) for m in session.snapshot()], reason=REASONING_REPAIR)
    return SessionRepaired(
        role,
        REASONING_REPAIR,
        len(indexes),
        f"{len(indexes)} stored assistant message(s) had no reasoning_content, which DeepSeek "
        "requires on every earlier turn when tools are sent; they now carry an empty one. "
        "This one request re-reads the history without the cache.",
    )
