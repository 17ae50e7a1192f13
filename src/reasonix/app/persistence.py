"""The stored side of an open session: both conversations mirrored into the
:class:`~reasonix.store.SessionStore`, events recorded, and the turn marks ``/rewind`` needs.

Every message is committed as its session appends it (``seq`` = its index); a rewrite (rewind,
compaction, planner rollback) keeps the common prefix in the store and replaces the rest. A
session cut short by a killed process is repaired by *appending* what the agent core would have
appended (an answer to a dangling user message, results for unanswered tool calls), never by
editing history, so the next request stays a byte-exact extension of the last one sent.

A storage failure never breaks a turn: it becomes one notice, and the conversation continues
unsaved.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

from reasonix.agent.agent import INTERRUPTED_CALL, INTERRUPTED_TURN
from reasonix.agent.repair import repair_reasoning
from reasonix.agent.session import Session
from reasonix.errors import SessionStoreError
from reasonix.events import Event, Sink
from reasonix.messages import AssistantMessage, Message, ToolMessage, UserMessage
from reasonix.store import SessionStore, StoreSink
from reasonix.tools.ask import ASK_TOOL_NAME

__all__ = [
    "ROLES",
    "Role",
    "SessionRecord",
    "StoredSession",
    "TurnMark",
    "TurnMarked",
    "TurnMarksReset",
    "load_marks",
    "remap_marks",
    "repair_messages",
]

Role = Literal["executor", "planner"]
ROLES: tuple[Role, ...] = ("executor", "planner")


@dataclass(frozen=True, slots=True)
class TurnMarked(Event):
    """Recorded when a user turn starts: where both sessions stood, so ``/rewind`` can cut the
    conversation back to that point after a restart too."""

    kind: ClassVar[str] = "turn_mark"
    turn: int
    executor_len: int
    planner_len: int
    agent_turn: int
    text: str = ""


@dataclass(frozen=True, slots=True)
class TurnMark:
    """Where a user turn started. ``agent_turn`` is the executor's turn counter before it, so
    the turn's file checkpoints are ``agent_turn + 1``. A length of ``-1`` means that role's
    conversation no longer has that point: a compaction folded it into its summary."""

    turn: int
    executor_len: int
    planner_len: int
    agent_turn: int
    text: str = ""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TurnMark:
        return cls(
            int(data["turn"]),
            int(data["executor_len"]),
            int(data["planner_len"]),
            int(data["agent_turn"]),
            str(data.get("text", "")),
        )

    @property
    def rewindable(self) -> bool:
        """Both conversations still hold the point where this turn started."""
        return self.executor_len >= 0 and self.planner_len >= 0


@dataclass(frozen=True, slots=True)
class TurnMarksReset(Event):
    """Recorded when the turn marks change other than by a new turn (a rewind removed some, a
    compaction moved or retired their positions): the complete list from then on."""

    kind: ClassVar[str] = "turn_marks"
    marks: tuple[TurnMark, ...] = ()


def load_marks(events: list[dict[str, Any]]) -> list[TurnMark]:
    """The turn marks as they stood at the end of a stored session's event timeline."""
    marks: list[TurnMark] = []
    for event in events:
        kind = event.get("kind")
        if kind == TurnMarked.kind:
            mark = TurnMark.from_dict(event)
            # Turns are numbered len(marks) + 1: a number seen again means the later ones
            # were rewound (sessions recorded before rewinds were).
            marks = [m for m in marks if m.turn < mark.turn]
            marks.append(mark)
        elif kind == TurnMarksReset.kind:
            marks = [TurnMark.from_dict(m) for m in event.get("marks", ())]
    return marks


def remap_marks(
    marks: list[TurnMark], role: str, old: tuple[Message, ...], new: tuple[Message, ...]
) -> list[TurnMark]:
    """Marks after ``role``'s conversation was rewritten from ``old`` to ``new`` (compaction,
    planner rollback). A position in the unchanged head stays; one in the verbatim tail moves
    with it; one in the part that was replaced becomes -1."""
    head = 0
    for a, b in zip(old, new, strict=False):
        if a != b:
            break
        head += 1
    tail = 0
    while (
        tail < min(len(old), len(new)) - head
        and old[len(old) - 1 - tail] == new[len(new) - 1 - tail]
    ):
        tail += 1
    out = []
    for mark in marks:
        pos = mark.executor_len if role == "executor" else mark.planner_len
        if pos < 0 or pos <= head:
            out.append(mark)
            continue
        moved = pos + len(new) - len(old) if pos >= len(old) - tail else -1
        if role == "executor":
            out.append(dataclasses.replace(mark, executor_len=moved))
        else:
            out.append(dataclasses.replace(mark, planner_len=moved))
    return out


def repair_messages(messages: list[Message]) -> list[Message]:
    """What to append to a session cut off by a killed process so it is valid to continue:
    results for tool calls left unanswered, and an answer to a dangling user message."""
    extra: list[Message] = []
    if not messages:
        return extra
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    last_assistant = next((m for m in reversed(messages) if isinstance(m, AssistantMessage)), None)
    if last_assistant is not None and last_assistant.tool_calls:
        for call in last_assistant.tool_calls:
            # An open ``ask`` waits for the user's next input, which answers it.
            if call.id not in answered and call.name != ASK_TOOL_NAME:
                extra.append(ToolMessage(call.id, INTERRUPTED_CALL, name=call.name, is_error=True))
    if not extra and isinstance(messages[-1], UserMessage):
        extra.append(AssistantMessage(content=INTERRUPTED_TURN))
    return extra


@dataclass
class StoredSession:
    """A session as it was read from the store (and claimed for this process)."""

    session_id: str
    messages: dict[Role, list[Message]]
    marks: list[TurnMark]

    @classmethod
    def create(
        cls, store: SessionStore, workspace: Path, executor_model: str, planner_model: str | None
    ) -> StoredSession:
        """A new, empty session, claimed."""
        sid = store.create_session(
            workspace, executor_model=executor_model, planner_model=planner_model
        )
        store.claim(sid)
        return cls(sid, {role: [] for role in ROLES}, [])

    @classmethod
    def load(
        cls, store: SessionStore, session_id: str, *, already_ours: bool = False
    ) -> StoredSession:
        """A stored session, claimed. Raises SessionStoreError for an unknown id or one that
        another reasonix process has open (two writers would overwrite each other's history).
        ``already_ours``: this process holds the claim already (do not release it on failure)."""
        info = store.get_session(session_id)
        if info is None:
            raise SessionStoreError(
                f"no session {session_id!r}; list them with `reasonix sessions list`"
            )
        if not store.claim(session_id):
            raise SessionStoreError(
                f"session {session_id} is open in another reasonix process; finish it there "
                "first, or start a new session"
            )
        try:
            messages = {role: store.load_messages(session_id, role) for role in ROLES}
            marks = load_marks(store.load_events(session_id))
        except BaseException:
            if not already_ours:
                store.release(session_id)
            raise
        return cls(session_id, messages, marks)


class _SessionMirror:
    """Keeps one agent's stored messages equal to its session."""

    def __init__(
        self,
        store: SessionStore,
        session_id: str,
        agent: str,
        stored: list[Message],
        report: Callable[[str], None],
    ) -> None:
        self.store = store
        self.session_id = session_id
        self.agent = agent
        self.stored = stored
        self.report = report

    def attach(self, session: Session) -> None:
        session.on_append(self.on_append)
        session.on_rewrite(self.on_rewrite)

    def on_append(self, session: Session, index: int, message: Message) -> None:
        if index != len(self.stored):
            self.sync(session.snapshot())
            return
        try:
            self.store.append_message(self.session_id, self.agent, index, message)
        except SessionStoreError as exc:
            self.report(str(exc))
            return
        self.stored.append(message)

    def on_rewrite(self, session: Session, reason: str) -> None:
        self.sync(session.snapshot(), reason)

    def sync(self, messages: tuple[Message, ...], reason: str = "resync") -> None:
        keep = 0
        for old, new in zip(self.stored, messages, strict=False):
            if old != new:
                break
            keep += 1
        try:
            self.store.truncate_messages(self.session_id, self.agent, keep, reason=reason)
            del self.stored[keep:]
            for i in range(keep, len(messages)):
                self.store.append_message(self.session_id, self.agent, i, messages[i])
                self.stored.append(messages[i])
        except SessionStoreError as exc:
            self.report(str(exc))


class _SafeStoreSink:
    """Records events in the current session; a storage failure becomes one notice instead of
    breaking the turn that emitted the event."""

    def __init__(self, store: SessionStore, session_id: str, report: Callable[[str], None]):
        self.inner = StoreSink(store, session_id)
        self.report = report

    def emit(self, event: Event) -> None:
        try:
            self.inner.emit(event)
        except SessionStoreError as exc:
            self.report(str(exc))


def reviewer_history(
    store: SessionStore, session_id: str, report: Callable[[str], None]
) -> list[Message]:
    """The reviewer's stored conversation, to continue it (its cache chain goes on)."""
    try:
        return list(store.load_messages(session_id, "reviewer"))
    except SessionStoreError as exc:
        report(str(exc))
        return []


class SessionRecord:
    """Persistence of one open session: the event sink that records into the store, the turn
    marks, and the listeners that mirror each role's conversation. ``report`` receives a
    storage failure's message (the façade turns the first one into a notice)."""

    def __init__(
        self, store: SessionStore, stored: StoredSession, report: Callable[[str], None]
    ) -> None:
        self.store = store
        self.session_id = stored.session_id
        self.marks: list[TurnMark] = list(stored.marks)
        self.report = report
        self.sink: Sink = _SafeStoreSink(store, self.session_id, report)
        #: repairs made on load (planned prefix breaks), for the façade to emit
        self.repairs: list[Event] = []

    def follow(self, role: Role, session: Session, stored: list[Message]) -> None:
        """Mirror ``session`` into the store from now on (``stored`` is what the store holds
        for it), keep the marks true across its rewrites, and repair a cut-off ending."""
        loaded = list(stored)
        _SessionMirror(self.store, self.session_id, role, loaded, self.report).attach(session)
        self._follow_rewrites(role, session)
        self.repairs += filter(None, [repair_reasoning(session, role)])
        # Repairs are appends, so the prefix already sent stays byte-identical.
        for message in repair_messages(loaded):
            session.add(message)

    def follow_child(self, name: str, session: Session, stored: Sequence[Message] = ()) -> None:
        """Mirror a subagent's new session (or the reviewer's) into the store under ``name``
        (``task-1``, …, ``reviewer``), so ``reasonix sessions show`` lists it with the parent's
        conversations; ``stored`` is what the store holds under that name already."""
        mirror = _SessionMirror(self.store, self.session_id, name, list(stored), self.report)
        mirror.attach(session)

    def _follow_rewrites(self, role: Role, session: Session) -> None:
        """Keep the turn marks pointing at the same turns when a compaction (or a planner
        rollback) rewrites ``role``'s conversation, and record the change."""
        shadow = list(session.snapshot())

        def on_append(s: Session, index: int, message: Message) -> None:
            if index == len(shadow):
                shadow.append(message)
            else:
                shadow[:] = s.snapshot()

        def on_rewrite(s: Session, reason: str) -> None:
            old, new = tuple(shadow), s.snapshot()
            shadow[:] = new
            if reason == "rewind":
                return  # cut_marks records what a rewind did to the marks
            marks = remap_marks(self.marks, role, old, new)
            if marks != self.marks:
                self.marks[:] = marks
                self.sink.emit(TurnMarksReset("controller", tuple(marks)))

        session.on_append(on_append)
        session.on_rewrite(on_rewrite)

    def mark_turn(
        self, executor_len: int, planner_len: int, agent_turn: int, text: str
    ) -> TurnMark:
        """Record where a new user turn starts; the first turn also titles the session."""
        mark = TurnMark(len(self.marks) + 1, executor_len, planner_len, agent_turn, text[:200])
        self.marks.append(mark)
        self.sink.emit(
            TurnMarked(
                "controller",
                mark.turn,
                mark.executor_len,
                mark.planner_len,
                mark.agent_turn,
                mark.text,
            )
        )
        if mark.turn == 1 and not self._has_title():
            self._set_title(text)
        return mark

    def cut_marks(self, target: TurnMark) -> None:
        """Forget ``target`` and every later turn (a rewind), and record it."""
        del self.marks[self.marks.index(target) :]
        self.sink.emit(TurnMarksReset("controller", tuple(self.marks)))

    def set_status(self, status: str) -> None:
        try:
            self.store.set_status(self.session_id, status)
        except SessionStoreError as exc:
            self.report(str(exc))

    def release(self) -> None:
        """Give up this process's claim on the session; a session in which no turn ran is not
        kept (a launch that sent nothing must not become the folder's latest session)."""
        try:
            self.store.drop_if_empty(self.session_id)
        except SessionStoreError as exc:
            self.report(str(exc))
        self.store.release(self.session_id)

    def _has_title(self) -> bool:
        info = self.store.get_session(self.session_id)
        return bool(info and info.title)

    def _set_title(self, text: str) -> None:
        title = " ".join(text.split())[:80]
        try:
            self.store.set_title(self.session_id, title)
        except SessionStoreError as exc:
            self.report(str(exc))
