"""The progress ledger: what the host itself observed tools achieve.

Progress is measured by the host, not by what the model says: a successful write, a successful
command with a result not seen before, a todo completion, a read of something not read before
(or read again after it changed), any other successful call with a new result. Repeating the
same call with the same outcome adds nothing, and failures never count as progress — so an
unchanged :meth:`ProgressLedger.signature` over several rounds means the executor is stalled.

Every observation also gets a sequence number, so evidence can be checked for *when* it happened:
a step is signed off only with work (or its verification command) observed after the step
started, and a verification run only counts if no write came after it. Todo bookkeeping
(``todo``/``todo_write`` effects) is progress for the stall watch but never evidence of work.
"""

from __future__ import annotations

import hashlib
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

from reasonix.agent.todo import TodoItem
from reasonix.tools.registry import Effect
from reasonix.tools.state import StateKey


@dataclass(frozen=True, slots=True)
class CommandRun:
    command: str
    ok: bool
    digest: str
    output_tail: str = ""
    seq: int = 0


#: effect kinds that record list bookkeeping, not work on the task
BOOKKEEPING = frozenset({"todo", "todo_write"})


class ProgressLedger:
    def __init__(self) -> None:
        self._seen: set[tuple[str, str, str]] = set()
        self._signature = hashlib.sha256(b"reasonix-progress").hexdigest()
        self.count = 0
        self.commands: list[CommandRun] = []
        #: the most recent outcomes, (what, digest, ok), for repeated-failure detection
        self.recent: deque[tuple[str, str, bool]] = deque(maxlen=16)
        #: sequence number of the latest observation (see :meth:`mark`)
        self.seq = 0
        #: sequence number of the latest new progress that was work (not todo bookkeeping)
        self.work_seq = 0
        #: sequence number of the latest successful write
        self.write_seq = 0

    def observe(self, effect: Effect, *, is_error: bool = False, output: str = "") -> bool:
        """Record one observation; return True if it was new progress."""
        self.seq += 1
        if effect.kind == "command":
            run = CommandRun(effect.target, effect.ok, effect.digest, output[-400:], self.seq)
            self.commands.append(run)
        if is_error or not effect.ok:
            return False
        if effect.kind == "write":
            self.write_seq = self.seq
        key = (effect.kind, effect.target, effect.digest)
        if key in self._seen:
            return False
        self._seen.add(key)
        self.count += 1
        if effect.kind not in BOOKKEEPING:
            self.work_seq = self.seq
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

    def mark(self) -> int:
        """A point in the record: evidence for a step must be observed after its mark."""
        return self.seq

    def signature(self) -> str:
        """A short digest of all progress so far."""
        return self._signature[:16]

    def command_succeeded(self, command: str, since: int = 0) -> bool:
        """Whether ``command`` (compared with whitespace runs collapsed) ran and exited 0 after
        the point ``since`` (a :meth:`mark`)."""
        wanted = " ".join(command.split())
        return any(
            run.ok and run.seq > since and " ".join(run.command.split()) == wanted
            for run in self.commands
        )

    def repeated_failure(self, times: int = 3) -> str | None:
        """What failed identically ``times`` times in a row at the end of the record, if so."""
        if len(self.recent) < times:
            return None
        tail = list(self.recent)[-times:]
        first = tail[0]
        if not first[2] and all(t == first for t in tail):
            return first[0]
        return None


#: The agent's progress ledger in its tools' context.
LEDGER_KEY = StateKey("ledger", ProgressLedger)
