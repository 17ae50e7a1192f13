"""``reasonix run --output-format stream-json`` and ``--input-format stream-json``: the line
format automation reads and writes (the README's "Stream-json events" table is its schema).

An ``init`` line first (:func:`init_object`), then every event as one JSON line with its ``ts``
(:class:`StreamJsonSink`); on input, one user message a line (:func:`input_message`). Apart
from :mod:`reasonix.cli.headless`, which runs the turns, because the format is a contract of
its own that tools written for ``claude -p`` and ``codex exec --json`` are ported against.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from reasonix.cli.commands import UsageError

if TYPE_CHECKING:
    from reasonix.app.session import AgentSession
    from reasonix.events import Event

__all__ = ["StreamJsonSink", "init_object", "input_message", "timestamp"]


def timestamp() -> str:
    """The ``ts`` of a stream-json line: now, ISO 8601 UTC with milliseconds."""
    from datetime import UTC, datetime

    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class StreamJsonSink:
    """``--output-format stream-json``'s sink: each event one JSON line with its ``ts``. Events
    that come before the ``init`` line (while the session opens) are held and written after it,
    so ``init`` is always the first line."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._held: list[dict[str, Any]] | None = []

    def write(self, obj: dict[str, Any]) -> None:
        """One line: ``obj`` with ``ts`` added (``kind``/``type`` stay first)."""
        line = json.dumps({**obj, "ts": timestamp()}, ensure_ascii=False)
        self._stream.write(line + "\n")
        self._stream.flush()

    def emit(self, event: Event) -> None:
        if self._held is not None:
            self._held.append({**event.to_dict(), "ts": timestamp()})
            return
        self.write(event.to_dict())

    def begin(self, init: dict[str, Any]) -> None:
        """Write the ``init`` line, then what was held."""
        self.write(init)
        held, self._held = self._held or [], None
        for obj in held:
            self._stream.write(json.dumps(obj, ensure_ascii=False) + "\n")
        self._stream.flush()


def init_object(session: AgentSession) -> dict[str, Any]:
    """The ``init`` line of stream-json: what this run works with. ``tools`` are all the
    executor can run; ``deferred_tools`` those of them whose schemas are sent only once the
    model looks them up."""
    tools = session.controller.executor.tools
    return {
        "kind": "init",
        "role": "session",
        "session_id": session.session_id,
        "models": session.models(),
        "tools": tools.names,
        "deferred_tools": sorted(tools.deferred),
        "permission_mode": session.mode,
        "cwd": str(session.workspace),
    }


def input_message(line: str, number: int) -> str | None:
    """The user text of one ``--input-format stream-json`` line (None for a blank line):
    ``{"type": "user", "message": {"content": "..." | [{"type": "text", "text": "..."}]}}``
    or ``{"text": "..."}``."""
    if not line.strip():
        return None
    where = f"--input-format stream-json: stdin line {number}"
    try:
        obj = json.loads(line)
    except ValueError as exc:
        raise UsageError(f"{where} is not JSON ({exc}); the turns before it ran") from None
    text: Any = None
    if isinstance(obj, dict):
        if isinstance(obj.get("text"), str):
            text = obj["text"]
        elif obj.get("type", "user") == "user" and isinstance(obj.get("message"), dict):
            content = obj["message"].get("content")
            if isinstance(content, str):
                text = content
            elif isinstance(content, list):
                blocks = [b for b in content if isinstance(b, dict) and b.get("type") == "text"]
                parts = [b["text"] for b in blocks if isinstance(b.get("text"), str)]
                if parts and len(parts) == len(blocks):
                    text = "\n".join(parts)
    if not isinstance(text, str) or not text.strip():
        raise UsageError(
            f'{where} is no user message: send {{"type": "user", "message": {{"content": '
            f'"..."}}}} or {{"text": "..."}}; the turns before it ran'
        )
    return text
