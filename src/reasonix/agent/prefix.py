"""Prefix shapes: what each request's cacheable prefix looked like, to explain cache misses.

A shape holds hashes of the system prompt, the tool schemas and each history message (wire
form). Comparing two shapes says whether the second request was a pure extension of the first
and, if not, which part changed first.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from reasonix.messages import Message, SystemMessage, canonical_json


def _h(text: str) -> str:
    return hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest()[:12]


@dataclass(frozen=True, slots=True)
class PrefixShape:
    system: str
    tools: str
    history: tuple[str, ...]
    epoch: int = 0

    def changes_from(self, prev: PrefixShape) -> tuple[str, ...]:
        """Parts that differ from ``prev`` in a way that breaks the prefix (empty = extension)."""
        changed: list[str] = []
        if self.system != prev.system:
            changed.append("system")
        if self.tools != prev.tools:
            changed.append("tools")
        n = len(prev.history)
        if len(self.history) < n or self.history[:n] != prev.history:
            changed.append("history")
        return tuple(changed)

    def first_divergence(self, prev: PrefixShape) -> int | None:
        """Index of the first history message that differs from ``prev``, if any."""
        for i, (a, b) in enumerate(zip(self.history, prev.history, strict=False)):
            if a != b:
                return i
        return None if len(self.history) >= len(prev.history) else len(self.history)


class PrefixTracker:
    """Builds shapes incrementally: each message is hashed once, when first seen."""

    def __init__(self) -> None:
        self._hashes: list[str] = []
        self._epoch = -1
        self._tools_src: str | None = None
        self._tools_hash = ""

    def shape(self, messages: tuple[Message, ...], tool_bytes: str, epoch: int) -> PrefixShape:
        if epoch != self._epoch:
            self._hashes = []
            self._epoch = epoch
        for m in messages[len(self._hashes) :]:
            self._hashes.append(_h(canonical_json(m.to_wire())))
        if tool_bytes is not self._tools_src:
            self._tools_src = tool_bytes
            self._tools_hash = _h(tool_bytes)
        system = next((m.content for m in messages if isinstance(m, SystemMessage)), "")
        history = tuple(self._hashes[: len(messages)])
        return PrefixShape(_h(system), self._tools_hash, history, epoch)
