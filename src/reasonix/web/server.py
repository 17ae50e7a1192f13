"""The dashboard's HTTP surface: a Starlette app whose every route renders the session façade
(:class:`~reasonix.app.AgentSession`) or calls one of its methods; no behaviour of its own.

Routes (all under the guard of :mod:`reasonix.web.security`):

- ``GET /`` and ``/static/...``: the page and its script and styles (no data in them);
- ``POST /api/auth``: the access token or password for the session cookie and a CSRF token;
- ``GET /api/me``: the CSRF token again (after a reload) and what this server serves;
- ``GET /api/sessions``, ``POST /api/sessions``: the folder's sessions; a new one;
- ``GET /api/sessions/{id}``: one session's state (writable here, or read-only because another
  reasonix holds it);
- ``GET /api/sessions/{id}/events``: its numbered events as server-sent events
  (:mod:`reasonix.web.hub`; ``Last-Event-ID`` resumes);
- ``POST /api/sessions/{id}/messages``, ``.../approvals/{approval}``, ``.../interrupt``,
  ``.../mode``, ``.../approve-plan``: the next message (a task, a slash command, or a
  ``!command`` the user runs themselves), an answer to an approval question,
  interrupting the turn, the permission mode, running a waiting plan.

A stored session is opened for writing (and claimed in the store, so no other process writes
to it) only when the page sends it something; a session another process holds is shown
read-only, its stored events followed as that process records them.

The sessions open for writing are held by the session host the editor frontend uses too
(:class:`~reasonix.app.host.SessionHost`: opening, resuming by id, closing); this module keeps
each session's event log beside it. It runs past 500 lines because every route is a short
method on the one object that serves them; reading request bodies is apart
(:mod:`reasonix.web.bodies`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from reasonix.app import commands
from reasonix.app.host import SessionHost
from reasonix.app.session import AgentSession
from reasonix.app.shell import shell_command
from reasonix.errors import ReasonixError, SessionError, StartupError
from reasonix.safety.permissions import MODE_HELP, mode_names
from reasonix.web.bodies import MAX_MESSAGE_BODY, HttpError, message_images, read_json
from reasonix.web.hub import EventLog
from reasonix.web.security import Guard, GuardMiddleware

if TYPE_CHECKING:
    from reasonix.app.launch import Launch
    from reasonix.app.turn import Turn
    from reasonix.messages import ImagePart
    from reasonix.store import SessionInfo

__all__ = ["STATIC_DIR", "Dashboard"]

log = logging.getLogger("reasonix.web")

STATIC_DIR = Path(__file__).with_name("static")
LIST_LIMIT = 200
#: Seconds between keep-alives on an idle event stream (and checks of a session that another
#: process writes).
IDLE_SECONDS = 2.0


class Dashboard:
    """The sessions one ``reasonix serve`` shows and steers.

    ``workspace`` is the folder it started in; ``every_folder`` shows every folder's sessions
    (``--all``). ``started`` is the one start-up (:mod:`reasonix.app.launch`): the session
    database, the held keys, and each folder's configuration with the command line's flags.
    """

    def __init__(
        self,
        started: Launch,
        guard: Guard,
        *,
        workspace: Path,
        every_folder: bool,
    ) -> None:
        self.store = started.store
        self.guard = guard
        self.workspace = workspace.resolve()
        self.every_folder = every_folder
        #: the sessions open for writing here
        self.host = SessionHost(started)
        self._logs: dict[str, EventLog] = {}
        self._drivers: set[asyncio.Task[None]] = set()

    # -- the app ----------------------------------------------------------------------------------

    def app(self) -> GuardMiddleware:
        routes = [
            Route("/", self._page),
            Route("/favicon.svg", self._favicon),
            Mount("/static", StaticFiles(directory=STATIC_DIR), name="static"),
            Route("/api/auth", self._api(self._auth), methods=["POST"]),
            Route("/api/me", self._api(self._me)),
            Route("/api/sessions", self._api(self._sessions), methods=["GET", "POST"]),
            Route("/api/sessions/{sid}", self._api(self._session)),
            Route("/api/sessions/{sid}/events", self._events),
            Route("/api/commands", self._api(self._commands)),
            Route("/api/sessions/{sid}/messages", self._api(self._message), methods=["POST"]),
            Route(
                "/api/sessions/{sid}/commands/{name}", self._api(self._command), methods=["POST"]
            ),
            Route("/api/sessions/{sid}/approvals/{aid}", self._api(self._answer), methods=["POST"]),
            Route("/api/sessions/{sid}/interrupt", self._api(self._interrupt), methods=["POST"]),
            Route("/api/sessions/{sid}/mode", self._api(self._mode), methods=["POST"]),
            Route(
                "/api/sessions/{sid}/approve-plan", self._api(self._approve_plan), methods=["POST"]
            ),
        ]
        return GuardMiddleware(Starlette(routes=routes), self.guard)

    @staticmethod
    def _api(
        handler: Callable[[Request], Any],
    ) -> Callable[[Request], Any]:
        async def endpoint(request: Request) -> Response:
            try:
                result = await handler(request)
            except HttpError as exc:
                return JSONResponse({"error": str(exc)}, status_code=exc.status)
            if isinstance(result, Response):
                return result
            return JSONResponse(result)

        return endpoint

    async def _page(self, request: Request) -> Response:
        return FileResponse(STATIC_DIR / "index.html", headers={"cache-control": "no-cache"})

    async def _favicon(self, request: Request) -> Response:
        return FileResponse(STATIC_DIR / "favicon.svg", media_type="image/svg+xml")

    # -- login ------------------------------------------------------------------------------------

    async def _auth(self, request: Request) -> Response:
        body = await read_json(request)
        token = body.get("token")
        password = body.get("password")
        session = self.guard.login(
            token=token if isinstance(token, str) else None,
            password=password if isinstance(password, str) else None,
        )
        if session is None:
            self.guard.limiter.failed(request.client.host if request.client else "?")
            raise HttpError(401, "wrong access token or password")
        cookie, csrf = session
        response = JSONResponse({"csrf": csrf})
        response.headers.append("set-cookie", self.guard.set_cookie_header(cookie).decode())
        return response

    async def _me(self, request: Request) -> dict[str, Any]:
        cookie = request.cookies.get(self.guard.cookie_name)
        from reasonix._version import __version__

        return {
            "csrf": self.guard.csrf_for(cookie),
            "workspace": str(self.workspace),
            "all": self.every_folder,
            "version": __version__,
        }

    # -- sessions ---------------------------------------------------------------------------------

    def _visible(self, sid: str) -> SessionInfo:
        info = self.store.get_session(sid)
        if info is None or not (self.every_folder or Path(info.workspace) == self.workspace):
            raise HttpError(404, f"no session {sid!r} here")
        return info

    def _state(self, sid: str) -> str:
        session = self.host.get(sid)
        if session is not None:
            return "running" if session.running else "open"
        return "in use elsewhere" if self.host.in_use_elsewhere(sid) else "stored"

    def _summary(self, info: SessionInfo) -> dict[str, Any]:
        usage = self.store.usage_summary(info.id)
        gate = self.store.last_event(info.id, "gate_decided")
        return {
            "id": info.id,
            "title": info.title,
            "workspace": info.workspace,
            "created_at": info.created_at,
            "updated_at": info.updated_at,
            "status": info.status,
            "state": self._state(info.id),
            "executor_model": info.executor_model,
            "planner_model": info.planner_model,
            "route": gate.get("route") if gate else None,
            "cost_usd": sum(u.cost for u in usage.values()),
            "requests": sum(u.requests for u in usage.values()),
        }

    async def _sessions(self, request: Request) -> dict[str, Any]:
        if request.method == "POST":
            body = await read_json(request)
            session = await self._open_new()
            text = body.get("text")
            if isinstance(text, str) and text.strip():
                return {"id": session.session_id, **await self._run_line(session, text)}
            return {"id": session.session_id}
        folder = None if self.every_folder else self.workspace
        # The store's rule (the one ``-c`` uses): a session in which no turn ran is not listed,
        # not even one opened here (``POST /api/sessions`` without text, a launch that sent
        # nothing); a turn is marked as it starts, so a running session is always listed.
        infos = self.host.list(folder, limit=LIST_LIMIT)
        return {"sessions": [self._summary(i) for i in infos]}

    async def _session(self, request: Request) -> dict[str, Any]:
        sid = request.path_params["sid"]
        info = self._visible(sid)
        out = self._summary(info)
        session = self.host.get(sid)
        if session is not None:
            out.update(
                writable=True,
                mode=session.mode,
                modes=[
                    {"id": mode.value, "name": name, "description": text}
                    for mode, (name, text) in MODE_HELP.items()
                ],
                running=session.running,
                waiting=session.waiting_approvals,
                models=session.models(),
            )
        else:
            busy = self.store.in_use(sid)
            out.update(
                writable=not busy,
                read_only_reason=(
                    "another reasonix process has this session open; it is shown read-only "
                    "here until that process ends"
                    if busy
                    else None
                ),
                running=False,
                waiting=[],
            )
        return out

    def _log(self, sid: str) -> EventLog:
        log_ = self._logs.get(sid)
        if log_ is None:
            stored = self.store.load_events(sid)
            log_ = EventLog(stored, stored=lambda: self.store.load_events(sid))
            log_.bind(asyncio.get_running_loop())
            self._logs[sid] = log_
        return log_

    def _follow_elsewhere(self, sid: str) -> Callable[[], None]:
        """While another process writes ``sid``, pass on the events it stores."""

        def poll() -> None:
            if sid in self.host:
                return
            log_ = self._logs[sid]
            stored = self.store.load_events(sid)
            for event in stored[log_.stored_count :]:
                log_.append(event)
            log_.stored_count = len(stored)

        return poll

    async def _events(self, request: Request) -> Response:
        sid = request.path_params["sid"]
        try:
            self._visible(sid)
        except HttpError as exc:
            return JSONResponse({"error": str(exc)}, status_code=exc.status)
        raw = request.headers.get("last-event-id") or request.query_params.get("after") or "0"
        try:
            last = max(0, int(raw))
        except ValueError:
            return JSONResponse({"error": f"Last-Event-ID must be a number, not {raw!r}"}, 400)
        log_ = self._log(sid)
        poll = self._follow_elsewhere(sid)

        async def body() -> AsyncIterator[bytes]:
            yield b"retry: 1000\n\n"
            async for item in log_.follow(last, idle=IDLE_SECONDS, on_idle=poll):
                if item is None:
                    yield b": idle\n\n"
                    continue
                number, data = item
                text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
                yield f"id: {number}\ndata: {text}\n\n".encode()

        return StreamingResponse(
            body(),
            media_type="text/event-stream",
            headers={"cache-control": "no-store", "x-accel-buffering": "no"},
        )

    # -- opening for writing ----------------------------------------------------------------------

    async def _open_new(self) -> AgentSession:
        log_ = EventLog()
        log_.bind(asyncio.get_running_loop())
        try:
            session = await self.host.open(self.workspace, sink=log_)
        except ReasonixError as exc:  # a config or credentials problem, said as such
            raise HttpError(400, str(exc)) from None
        self._logs[session.session_id] = log_
        return session

    async def _writable(self, sid: str) -> AgentSession:
        info = self._visible(sid)
        session = self.host.get(sid)
        if session is not None:
            return session
        log_ = self._log(sid)
        self._follow_elsewhere(sid)()  # catch up with what was stored before we claim it
        try:
            return await self.host.open(info.workspace, resume_id=sid, sink=log_)
        except StartupError as exc:
            raise HttpError(400, str(exc)) from None
        except ReasonixError as exc:  # held by another process, or it cannot be resumed
            raise HttpError(409, str(exc)) from None

    def _opened(self, sid: str) -> AgentSession:
        self._visible(sid)
        session = self.host.get(sid)
        if session is None:
            raise HttpError(409, "this session is not open here; send it a message first")
        return session

    # -- steering ---------------------------------------------------------------------------------

    async def _run_line(
        self, session: AgentSession, text: str, images: tuple[ImagePart, ...] = ()
    ) -> dict[str, Any]:
        """A message: a slash command is answered from the one table (its reply goes to every
        tab; a command that runs a turn starts it), anything else is a turn (with its images,
        dropped or picked in the page); ``!command`` runs the user's own shell command."""
        command = shell_command(text)
        if command is not None:
            return {"shell": self._shell(session, text, command)}
        if not commands.is_command(session, text, "web"):

            def start(s: AgentSession) -> Turn:
                return s.start_turn(text, images=images)

            return {"turn": self._start(session, text, start).number}
        answer = await commands.answer(session, text, "web", images=images)
        if answer.error:
            raise HttpError(400, answer.text)
        out: dict[str, Any] = {"reply": answer.text}
        log_ = self._logs.get(session.session_id)
        if answer.text and log_ is not None:
            log_.append({"kind": "command_reply", "role": "user", "text": answer.text})
        if answer.turn is not None:
            out["turn"] = self._start(session, text, answer.turn).number
        return out

    def _start(
        self, session: AgentSession, text: str, start: Callable[[AgentSession], Turn]
    ) -> Turn:
        """Start a turn (``start``) for the message ``text`` and drive it to its end; a
        command's closing words (its outcome's) are said to every tab once it ended."""
        try:
            turn = start(session)
        except SessionError as exc:
            raise HttpError(409, str(exc)) from None
        # What the user sent, for every tab (the store files it as the turn's mark).
        log_ = self._logs.get(session.session_id)
        if log_ is not None:
            log_.append({"kind": "user_message", "role": "user", "text": text})
        task = asyncio.get_running_loop().create_task(self._drive(session, turn))
        self._drivers.add(task)
        task.add_done_callback(self._drivers.discard)
        return turn

    def _shell(self, session: AgentSession, text: str, command: str) -> str:
        """Start the user's ``!command`` (``session.shell``: the bash tool's path, its approval
        question an event every tab shows) and let it run; its event
        (:class:`~reasonix.app.shell.ShellRan`) shows the output to every tab."""
        try:
            running = session.shell.start(command)
        except SessionError as exc:
            raise HttpError(409, str(exc)) from None
        except ValueError as exc:
            raise HttpError(400, str(exc)) from None
        log_ = self._logs.get(session.session_id)
        if log_ is not None:
            log_.append({"kind": "user_message", "role": "user", "text": text})

        async def drive() -> None:
            try:
                await running.result()
            except Exception:  # a failure the core did not turn into a result
                log.exception("shell command failed")

        task = asyncio.get_running_loop().create_task(drive())
        self._drivers.add(task)
        task.add_done_callback(self._drivers.discard)
        return command.strip()

    async def _drive(self, session: AgentSession, turn: Turn) -> None:
        """Run the turn to its end (its events reach the page through the session's sink),
        then say a command's closing words."""
        async for _ in turn:
            pass
        log_ = self._logs.get(session.session_id)
        try:
            outcome = await turn.result()
        except Exception as exc:  # a failure the core did not turn into a result
            log.exception("turn failed")
            if log_ is not None:
                log_.append(
                    {
                        "kind": "error",
                        "role": "controller",
                        "error_type": type(exc).__name__,
                        "message": str(exc),
                    }
                )
            return
        if log_ is not None:
            log_.append(
                {
                    "kind": "turn_outcome",
                    "role": "controller",
                    "turn": turn.number,
                    "stop_reason": outcome.result.stop_reason,
                    "interrupted": outcome.interrupted,
                    "refused": outcome.refused,
                    "requests": outcome.requests,
                }
            )
            if outcome.closing:
                log_.append({"kind": "command_reply", "role": "user", "text": outcome.closing})

    async def _message(self, request: Request) -> dict[str, Any]:
        sid = request.path_params["sid"]
        self._visible(sid)  # a signed-in caller naming a session it may see, before the body
        body = await read_json(request, MAX_MESSAGE_BODY)
        text = body.get("text")
        if not isinstance(text, str) or not text.strip():
            raise HttpError(400, 'send {"text": "..."}: the message is empty')
        images = message_images(body.get("images"))
        session = await self._writable(sid)
        return await self._run_line(session, text, images)

    async def _commands(self, request: Request) -> dict[str, Any]:
        """The commands the dashboard offers: the one table's rows meaningful here."""
        return {
            "commands": [
                {"name": c.name, "args": c.args, "help": c.help} for c in commands.listing("web")
            ]
        }

    async def _command(self, request: Request) -> dict[str, Any]:
        """``POST /api/sessions/{sid}/commands/{name}`` with ``{"args": "..."}``: any command of
        the table, the same as sending ``/name args`` as a message."""
        name = request.path_params["name"]
        body = await read_json(request)
        args = body.get("args", "")
        if not isinstance(args, str):
            raise HttpError(400, 'send {"args": "..."} (a string, possibly empty)')
        if commands.command_for(name, "web") is None:
            raise HttpError(404, f"no command /{name} here; GET /api/commands lists them")
        session = await self._writable(request.path_params["sid"])
        return await self._run_line(session, f"/{name} {args}".strip())

    async def _answer(self, request: Request) -> dict[str, Any]:
        session = self._opened(request.path_params["sid"])
        body = await read_json(request)
        choice = body.get("choice")
        reason = body.get("reason", "")
        if not isinstance(choice, str) or not isinstance(reason, str):
            raise HttpError(400, 'send {"choice": "allow_once|allow_session|deny", "reason": ""}')
        try:
            session.answer_approval(request.path_params["aid"], choice, reason)  # type: ignore[arg-type]
        except SessionError as exc:
            raise HttpError(409, str(exc)) from None
        return {"answered": request.path_params["aid"]}

    async def _interrupt(self, request: Request) -> dict[str, Any]:
        session = self._opened(request.path_params["sid"])
        return {"interrupted": session.interrupt()}

    async def _mode(self, request: Request) -> dict[str, Any]:
        session = self._opened(request.path_params["sid"])
        body = await read_json(request)
        mode = body.get("mode")
        if not isinstance(mode, str):
            raise HttpError(400, f'send {{"mode": "{mode_names()}"}}')
        try:
            session.set_mode(mode)
        except ReasonixError as exc:
            raise HttpError(400, str(exc)) from None
        return {"mode": session.mode}

    async def _approve_plan(self, request: Request) -> dict[str, Any]:
        session = await self._writable(request.path_params["sid"])
        return await self._run_line(session, "/approve")

    # -- closing ----------------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Interrupt running turns and close every session this server opened."""
        self.host.interrupt_all()
        for task in list(self._drivers):
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(task, 30)
        await self.host.aclose()
