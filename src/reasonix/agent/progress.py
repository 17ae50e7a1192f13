"""The progress ledger: what the host itself observed tools achieve.

Progress is measured by the host, not by what the model says: a successful write, a successful
command with a result not seen before, a todo completion, a read of something not read before
(or read again after it changed), any other successful call with a new result. Repeating the
same call with the same outcome adds nothing, and failures never count as progress — so an
unchanged :meth:`ProgressLedger.signature` over several rounds means the executor is stalled.
"""

from __future__ import annotations

import hashlib
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

from reasonix.agent.todo import TodoItem
from reasonix.tools.registry import Effect


@dataclass(frozen=True, slots=True)
class CommandRun:
    command: str
    ok: bool
    digest: str
    output_tail: str = ""


class ProgressLedger:
    def __init__(self) -> None:
        self._seen: set[tuple[str, str, str]] = set()
        self._signature = hashlib.sha256(b"reasonix-progress").hexdigest()
        self.count = 0
        self.commands: list[CommandRun] = []
        #: the most recent outcomes, (what, digest, ok), for repeated-failure detection
        self.recent: deque[tuple[str, str, bool]] = deque(maxlen=16)

    def observe(self, effect: Effect, *, is_error: bool = False, output: str = "") -> bool:
        """Record one observation; return True if it was new progress."""
        if effect.kind == "command":
            self.commands.append(CommandRun(effect.target, effect.ok, effect.digest, output[-400:]))
        if is_error or not effect.ok:
            return False
        key = (effect.kind, effect.target, effect.digest)
        if key in self._seen:
            return False
        self._seen.add(key)
        self.count += 1
        self._signature = hashlib.sha256(
            (self._signature + "\x00" + "\x00".join(key)).encode()
        ).hexdigest()
        return True

    def observe_todo(self, items: Iterable[TodoItem]) -> None:
        """A todo item reaching ``completed`` is progress (once per item)."""
        for item in items:
            if item.status == "completed":
                self.observe(Effect("todo", f"{item.id}:{item.content}", "completed"))

    def record_call(self, key: str, digest: str, ok: bool) -> None:
        """The outcome of one tool call (``key``: tool and normalised arguments)."""
        self.recent.append((key, digest, ok))

    def last_outcome(self, key: str) -> tuple[str, str, bool] | None:
        return next((r for r in reversed(self.recent) if r[0] == key), None)

    def signature(self) -> str:
        """A short digest of all progress so far."""
        return self._signature[:16]

    def command_succeeded(self, command: str) -> bool:
        """Whether ``command`` (compared without surrounding whitespace) ran and exited 0."""
        wanted = " ".join(command.split())
        return any(run.ok and " ".join(run.command.split()) == wanted for run in self.commands)

    def repeated_failure(self, times: int = 3) -> str | None:
        """What failed identically ``times`` times in a row at the end of the record, if so."""
        if len(self.recent) < times:
            return None
        tail = list(self.recent)[-times:]
        first = tail[0]
        if not first[2] and all(t == first for t in tail):
            return first[0]
        return None
