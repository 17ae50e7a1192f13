"""The sessions a long-running frontend holds open: the editor's ACP server and the dashboard.

Both serve many sessions from one process, in any folder: they open a new one or resume a
stored one by id, find it again by id for every later request, and close them all at the end.
:class:`SessionHost` does that once, over the one start-up (:class:`~reasonix.app.launch.Launch`):
each folder's configuration comes from :meth:`Launch.config_for` (its keys held, credentials
checked), every session answers its approvals as events (``remote_approvals``), and opening the
same id twice at once gives one session. A frontend keeps only its rendering of a session (an
editor's update mapper, a page's event log) beside it, keyed by the same id.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from reasonix.errors import SessionError

if TYPE_CHECKING:
    from reasonix.app.launch import Launch
    from reasonix.app.session import AgentSession
    from reasonix.events import Sink
    from reasonix.mcp import McpServerConfig
    from reasonix.store import SessionInfo, SessionStore
    from reasonix.tools.ask import QuestionAsker

__all__ = ["SessionHost"]

#: what a session held by another process is refused with
IN_USE = "another reasonix process has this session open; it can be written here once that ends"


class SessionHost:
    """The open sessions of one long-running frontend, by session id (see the module
    docstring). ``started`` is the frontend's start-up: its store, held keys and flags."""

    def __init__(self, started: Launch) -> None:
        self.started = started
        self._open: dict[str, AgentSession] = {}
        self._opening = asyncio.Lock()

    @property
    def store(self) -> SessionStore:
        return self.started.store

    # -- finding ----------------------------------------------------------------------------------

    def get(self, session_id: str) -> AgentSession | None:
        """The session ``session_id`` if it is open here."""
        return self._open.get(session_id)

    def __contains__(self, session_id: object) -> bool:
        return session_id in self._open

    def __iter__(self) -> Iterator[AgentSession]:
        return iter(list(self._open.values()))

    def in_use_elsewhere(self, session_id: str) -> bool:
        """Whether another process holds ``session_id`` (it is not open here)."""
        return session_id not in self._open and self.store.in_use(session_id)

    def list(self, folder: str | os.PathLike[str] | None, limit: int = 100) -> list[SessionInfo]:
        """The stored sessions of ``folder`` (every folder's with None), most recent first."""
        from reasonix.app.session import AgentSession

        if folder is None:
            return self.store.list_sessions(None, limit=limit)
        return AgentSession.list_sessions(self.store, folder, limit=limit)

    # -- opening ----------------------------------------------------------------------------------

    async def open(
        self,
        workspace: str | os.PathLike[str],
        *,
        resume_id: str | None = None,
        sink: Sink | None = None,
        asker: QuestionAsker | None = None,
        extra_mcp_servers: Sequence[McpServerConfig] = (),
    ) -> AgentSession:
        """A new session in ``workspace``, or the stored ``resume_id`` (the open one when it is
        open here already). Raises :class:`~reasonix.errors.StartupError` for the folder's
        configuration or credentials, :class:`~reasonix.errors.SessionError` for a session
        another process holds, another :class:`~reasonix.errors.ReasonixError` for the rest
        (an unknown id)."""
        from reasonix.app.session import AgentSession

        async with self._opening:
            if resume_id is not None:
                if resume_id in self._open:
                    return self._open[resume_id]
                if self.store.in_use(resume_id):
                    raise SessionError(IN_USE)
            config = self.started.config_for(Path(workspace))
            session = await AgentSession.open(
                config,
                workspace,
                store=self.store,
                remote_approvals=True,
                sink=sink,
                resume_id=resume_id,
                environ=self.started.environ,
                extra_mcp_servers=extra_mcp_servers,
                asker=asker,
            )
            self._open[session.session_id] = session
            return session

    # -- closing ----------------------------------------------------------------------------------

    def interrupt_all(self) -> None:
        """Interrupt every running turn (a frontend then waits for its own turn tasks)."""
        for session in self._open.values():
            session.interrupt()

    async def aclose(self) -> None:
        """Close every session opened here (its MCP servers, jobs and claim in the store)."""
        for session in list(self._open.values()):
            with contextlib.suppress(Exception):
                await session.aclose()
        self._open.clear()
