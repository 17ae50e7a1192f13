"""The history part of a session (``session.history``): where each turn started, rewind and
undo, what the session changed in the files (``/diff``), and which stored session is open
(list, resume, start a new one)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from reasonix.app.persistence import ROLES, StoredSession, TurnMark
from reasonix.app.rewind import rewind_turn, undo_steps
from reasonix.store import SessionInfo

if TYPE_CHECKING:
    from reasonix.app.command_types import Answer, Context
    from reasonix.app.session import AgentSession

__all__ = ["DIFF_LIMIT", "SessionHistory", "rewind_command"]

#: the most of ``/diff``'s patch shown at once (characters)
DIFF_LIMIT = 200_000


class SessionHistory:
    """The session's turns, rewind/undo, and switching stored sessions; ``session.history``."""

    def __init__(self, session: AgentSession) -> None:
        self._s = session

    @property
    def marks(self) -> list[TurnMark]:
        """Where each user turn of this session started (oldest first)."""
        return list(self._s._record.marks)

    def sessions(self, limit: int = 20) -> list[SessionInfo]:
        """This workspace's sessions in which a turn ran, most recent first, and this one."""
        s = self._s
        return s.store.list_sessions(s.workspace, limit=limit, include=[s.session_id])

    def rewind(self, turn: int | None = None) -> str:
        """Undo user turn ``turn`` and everything after it (default: the last turn): restore
        the files the tools changed and cut both conversations back to where it started."""
        self._s._check_idle("rewind")
        s = self._s
        text = rewind_turn(s._controller, s._checkpoints, s._record, turn, s.jobs)
        self._s._events.last_prompt.clear()  # the context shrank: no stale figure in a status line
        return text

    def force(self, paths: str) -> str:
        """``/rewind --force PATH...`` (``paths`` in shell quoting): right after a rewind, put
        the files it left alone back to the version it went to, over what is there now."""
        import shlex

        self._s._check_idle("rewind")
        try:
            names = shlex.split(paths)
        except ValueError as exc:
            return f"Cannot read the paths {paths!r}: {exc}. Nothing was changed."
        return str(self._s._checkpoints.force(names))

    def undo(self, steps: int = 1) -> str:
        """Undo the last ``steps`` steps that may have changed files (``/undo``): the files go
        back to before them and the executor's conversation to the model step that made the
        first of them."""
        self._s._check_idle("undo")
        s = self._s
        return undo_steps(s._controller, s._checkpoints, s._record, steps, s.jobs)

    def diff(self) -> str:
        """``/diff``: what changed in the files since this session's first step (its snapshot
        against the files now), a summary line then the unified diff (cut past
        :data:`DIFF_LIMIT` characters, saying so)."""
        checkpoints = self._s._checkpoints
        if not checkpoints.enabled:
            return "Snapshots are off ([checkpoints] enabled = false): nothing to compare."
        changes = checkpoints.changes_since_start()
        if changes is None:
            return "No changes: no step of this session has changed files."
        if not changes:
            return "No changes: the files are as they were before this session's first step."
        from reasonix.app.file_diff import render_changes

        summary, patch = render_changes(changes)
        if len(patch) > DIFF_LIMIT:
            rest = len(patch) - DIFF_LIMIT
            patch = patch[:DIFF_LIMIT] + f"\n... ({rest} more characters not shown)\n"
        return f"{summary} since this session's first step:\n\n{patch.rstrip()}"

    def export(self, name: str | None = None) -> Path:
        """``/export``: write the transcript as markdown to a new file ``name`` (relative to
        the workspace; default ``reasonix-<session id>.md``); returns its path. Raises
        SessionError when the file exists (nothing is overwritten)."""
        from reasonix.app.export import export_transcript

        return export_transcript(self._s, name)

    async def clear(self) -> str:
        """Start a new session (the old one stays in the store)."""
        self._s._check_idle("start a new session")
        if self._s._mcp is not None:
            await self._s._mcp.refresh_snapshot()
        old = self._s.session_id
        from reasonix.app.session import _role_models

        models = _role_models(self._s.config, self._s._providers)
        stored = StoredSession.create(self._s.store, self._s.workspace, *models)
        await self._s._hooks.session_end("clear")
        self._switch(stored)
        await self._s._hooks.session_start("clear")
        if self._s.store.get_session(old) is None:  # no turn ran in it: it was not kept
            return f"New session {self._s.session_id}."
        return f"New session {self._s.session_id} (previous: {old}; /resume {old} to go back)."

    async def resume(self, session_id: str) -> str:
        """Switch to a stored session (both roles)."""
        self._s._check_idle("switch sessions")
        stored = StoredSession.load(
            self._s.store, session_id, already_ours=session_id == self._s.session_id
        )
        self._switch(stored)
        await self._s._hooks.session_start("resume")
        counts = {role: len(stored.messages[role]) for role in ROLES}
        return (
            f"Resumed {session_id}: {counts['executor']} executor and {counts['planner']} "
            "planner messages."
        )

    def _switch(self, stored: StoredSession) -> None:
        previous = self._s.session_id
        if previous != stored.session_id:
            self._s._record.release()
        self._s._attach(stored)


def rewind_command(ctx: Context) -> Answer:
    """``/rewind``, ``/rewind TURN``, ``/rewind --force PATH...`` (the command table's row)."""
    from reasonix.app.command_types import Answer

    word, _, rest = (ctx.arg or "").strip().partition(" ")
    history = ctx.session.history
    if word == "--force" and rest.strip():
        return Answer(history.force(rest))
    if rest.strip() or (word and not word.isdigit()):
        return Answer(f"Usage: /rewind [TURN] | --force PATH... (not {ctx.arg!r})", error=True)
    return Answer(history.rewind(int(word) if word else None))
