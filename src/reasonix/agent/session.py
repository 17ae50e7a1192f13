"""``Session``: one agent's conversation, append-only.

Appending is the only ordinary way a session changes, which is what keeps every request a
byte-exact extension of the previous one. The two planned exceptions — compaction and rewind —
go through :meth:`Session.rewrite`, which bumps ``epoch`` so prefix tracking knows the break was
intended.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Iterable
from typing import Any

from reasonix.messages import Message, message_from_dict, message_to_dict, with_reasoning

AppendListener = Callable[["Session", int, Message], None]
RewriteListener = Callable[["Session", str], None]


class Session:
    """An id and an append-only list of messages. Never shared between agents."""

    def __init__(self, id: str | None = None, messages: Iterable[Message] = ()) -> None:
        # Given messages are kept exactly as they were stored (a resume must send the same
        # bytes); reasonix.agent.repair fixes ones stored before the reasoning rule.
        self.id = id or secrets.token_hex(6)
        self._messages: list[Message] = list(messages)
        self.epoch = 0
        self._append_listeners: list[AppendListener] = []
        self._rewrite_listeners: list[RewriteListener] = []

    def add(self, message: Message) -> None:
        """Append one message and tell the listeners (e.g. the session store) at once.

        An assistant message without reasoning enters with ``reasoning_content=""``: DeepSeek
        needs the field on every earlier assistant turn of a request with tools, and setting it
        here, once, keeps the message's bytes the same on every later request."""
        message = with_reasoning(message)
        self._messages.append(message)
        index = len(self._messages) - 1
        for listener in self._append_listeners:
            listener(self, index, message)

    def snapshot(self) -> tuple[Message, ...]:
        """An immutable copy of the messages so far."""
        return tuple(self._messages)

    def __len__(self) -> int:
        return len(self._messages)

    @property
    def last(self) -> Message | None:
        return self._messages[-1] if self._messages else None

    def rewrite(self, messages: Iterable[Message], reason: str) -> None:
        """Replace the history (compaction, rewind, a resume's repair). The only planned break
        of the prefix; assistant messages get their reasoning field as in :meth:`add`."""
        self._messages = [with_reasoning(m) for m in messages]
        self.epoch += 1
        for listener in self._rewrite_listeners:
            listener(self, reason)

    def on_append(self, listener: AppendListener) -> None:
        self._append_listeners.append(listener)

    def on_rewrite(self, listener: RewriteListener) -> None:
        self._rewrite_listeners.append(listener)

    # -- serialisation -------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "epoch": self.epoch,
            "messages": [message_to_dict(m) for m in self._messages],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Session:
        session = cls(str(data["id"]), (message_from_dict(m) for m in data["messages"]))
        session.epoch = int(data.get("epoch", 0))
        return session

    @classmethod
    def from_json(cls, text: str) -> Session:
        return cls.from_dict(json.loads(text))
