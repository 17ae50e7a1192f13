"""The records of the command table (:mod:`reasonix.app.commands`): a command, what its
handler gets, what a command line comes to, and the frontends. Apart from the table so the
modules that implement a command's handler can build an :class:`Answer` without importing the
table that names them."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from reasonix.app.mentions import Prepared
    from reasonix.app.session import AgentSession
    from reasonix.app.turn import Turn
    from reasonix.messages import ImagePart

__all__ = [
    "APP_ONLY",
    "EVERYWHERE",
    "SHELL_HELP",
    "SHELL_PREFIX",
    "SHELL_WHERE",
    "Answer",
    "ArgKind",
    "Command",
    "Context",
    "Frontend",
    "Handler",
    "Starter",
]

#: The frontends: the interactive app, ``reasonix run`` and batch task text, an editor over
#: ACP, the web dashboard.
Frontend = Literal["app", "run", "acp", "web"]
EVERYWHERE: frozenset[Frontend] = frozenset({"app", "run", "acp", "web"})
#: where a command that swaps the session for another is meaningful: the frontends that show
#: one session at a time and follow the swap
APP_ONLY: frozenset[Frontend] = frozenset({"app"})

#: What starts a line the user means as their own shell command (``!git status``,
#: :mod:`reasonix.app.shell`), where it is offered (where a person types, and the output can
#: join the next message they send) and its line in ``/help``.
SHELL_PREFIX = "!"
SHELL_WHERE: frozenset[Frontend] = frozenset({"app", "acp", "web"})
SHELL_HELP = "run a shell command yourself; its output joins your next message (no request)"

#: How a command's argument is read: none (ignored), required text, optional text, an
#: optional whole number.
ArgKind = Literal["none", "text", "optional", "number"]

Starter = Callable[["AgentSession"], "Turn"]


@dataclass(frozen=True, slots=True)
class Answer:
    """What a command line comes to. ``text``: what to show (may be empty); ``turn``: a turn
    to start and run (the frontend's own way); ``then``: what a handler says once that turn
    ended (:func:`~reasonix.app.commands.answer` folds it into the turn, whose outcome carries
    it as ``closing``: an Answer a frontend gets has ``then`` None); ``error``: the text is an
    argument or usage error; ``exit``: the frontend should end; ``switched``: the session now
    shows another stored conversation (a frontend may recap)."""

    text: str = ""
    turn: Starter | None = None
    then: Callable[[AgentSession], str] | None = None
    error: bool = False
    exit: bool = False
    switched: bool = False

    def closed(self) -> Answer:
        """This answer with ``then`` folded into the turn it starts: the core says a command's
        closing words once, in the turn's outcome, and every frontend shows that."""
        start, then = self.turn, self.then
        if start is None or then is None:
            return self

        def started(session: AgentSession) -> Turn:
            turn = start(session)
            turn.close_with(lambda: then(session))
            return turn

        return dataclasses.replace(self, turn=started, then=None)


@dataclass(frozen=True, slots=True)
class Context:
    """What a handler gets: the session, the argument (read per the command's ``arg``), the
    frontend asking, and what that frontend adds (its environment for ``/config``; ``prepare``
    turns a task's text into the message and its images, e.g. attaching ``@path`` mentions,
    raising ValueError for an image that may not be sent); ``images`` came with the line;
    ``request``: the user's own words when the frontend attached data after the line (piped
    input, an editor's embedded files), for auto mode's reviewer (``request`` of
    :meth:`~reasonix.app.session.AgentSession.start_turn`; None: the line is all theirs)."""

    session: AgentSession
    arg: str
    frontend: Frontend
    environ: Mapping[str, str] | None = None
    prepare: Callable[[str], Prepared] | None = None
    images: tuple[ImagePart, ...] = ()
    request: str | None = None


Handler = Callable[[Context], Awaitable[Answer]]


@dataclass(frozen=True, slots=True)
class Command:
    """One slash command. ``args`` is the argument as usage shows it (``"[TURN]"``);
    ``arg`` how it is read; ``hint`` what a wrong number is (``"TURN is a number from
    /turns"``); ``where`` the frontends it is meaningful in; ``local`` commands are answered
    by the frontend itself (``handler`` is None); ``paths``: the argument is a path
    (completed as one); ``images``: its turn carries the images its line came with (any other
    command refuses them)."""

    name: str
    args: str
    help: str
    handler: Handler | None
    arg: ArgKind = "none"
    hint: str = ""
    where: frozenset[Frontend] = EVERYWHERE
    aliases: tuple[str, ...] = ()
    paths: bool = False
    images: bool = False

    @property
    def local(self) -> bool:
        return self.handler is None

    @property
    def usage(self) -> str:
        return f"Usage: /{self.name} {self.args}".rstrip()

    def check(self, arg: str) -> str | None:
        """The argument error for ``arg`` (None when it is fine)."""
        if self.arg == "text" and not arg:
            return self.usage
        if self.arg == "number" and arg and not arg.isdigit():
            return f"{self.usage} ({self.hint}, not {arg!r})"
        return None
