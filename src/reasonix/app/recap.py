"""A short recap of a session's last turns, for a frontend resuming it.

Each turn is what the user asked (as typed, from the turn marks, so host-written messages such
as plan handoffs do not count as turns) and the last thing the executor answered in it.
"""

from __future__ import annotations

from collections.abc import Sequence

from reasonix.app.persistence import TurnMark
from reasonix.messages import AssistantMessage, Message

__all__ = ["recap"]


def recap(
    marks: Sequence[TurnMark], messages: Sequence[Message], turns: int = 3
) -> list[tuple[str, str]]:
    """``(request, answer)`` for the last ``turns`` user turns, oldest first; whitespace is
    folded to one line. The answer is "" when the turn has none (interrupted, or compacted
    into a summary)."""
    out: list[tuple[str, str]] = []
    chosen = list(marks)[-turns:] if turns > 0 else []
    following = [*list(marks)[len(marks) - len(chosen) + 1 :], None]
    for mark, nxt in zip(chosen, following, strict=True):
        answer = ""
        start = mark.executor_len
        end = nxt.executor_len if nxt is not None and nxt.executor_len >= 0 else len(messages)
        if start >= 0:
            for message in messages[start:end]:
                if isinstance(message, AssistantMessage) and message.content.strip():
                    answer = message.content
        out.append((" ".join(mark.text.split()), " ".join(answer.split())))
    return out
