"""The interactive terminal app: a prompt_toolkit prompt, Rich rendering of events, slash
commands, approval prompts, and Ctrl-C that interrupts a running turn without losing the session.

Behaviour lives in the session façade (:class:`~reasonix.app.session.AgentSession`); this module
parses input and draws.

It runs past 500 lines and is left whole for now: the terminal app's own issue is rewriting it
(prompt, bindings, approvals and slash commands together), and splitting it under that change
would only make the two collide. What it should split along once that lands: the approval
prompt and the slash-command table, each of which reads the app's state but not its loop.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
from collections.abc import Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeVar, cast

from prompt_toolkit import PromptSession
from prompt_toolkit.application import get_app
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.filters import Condition
from prompt_toolkit.formatted_text import HTML, FormattedText
from prompt_toolkit.history import FileHistory, InMemoryHistory
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from rich.cells import cell_len

from reasonix.app import commands
from reasonix.cli.commands import EXIT_OK, UsageError, start
from reasonix.cli.status import LiveStatus, StatusFile, fit
from reasonix.errors import ReasonixError
from reasonix.store import default_store_path
from reasonix.store.private import private_dir, private_file
from reasonix.terminal_text import printable, terminal_safe

if TYPE_CHECKING:
    # Rich's console and the renderer load once the first frame is drawn (the header is
    # drawn by prompt_toolkit, which draws the prompt anyway): about a tenth of the start-up.
    # The session and what it brings (control, agents, tools, snapshots, MCP) load after the
    # prompt is on the screen too (see App.main): start-up time is a feature.
    from rich.console import Console

    from reasonix.app.mentions import Attached
    from reasonix.app.session import AgentSession
    from reasonix.app.shell import ShellCommand
    from reasonix.app.turn import Turn, TurnOutcome
    from reasonix.cli.render import TerminalRenderer
    from reasonix.config import Config
    from reasonix.control.plan import Plan
    from reasonix.messages import ImagePart
    from reasonix.safety.permissions import ApprovalAnswer, ApprovalRequest
    from reasonix.store import SessionStore

T = TypeVar("T")

RESUME = "/resume "

HELP_INTRO = """\
Type a task and press Enter. New line: Esc then Enter, or end the line with a backslash (\\).
Typing / opens the command menu; Tab completes paths; @path attaches a file (or a folder).
!command runs a shell command (asked about like the model's) and its output joins your next
message; #note keeps a note in the project's memory file. Neither sends a request.
Shift+Tab cycles the permission modes (shown in the toolbar); Esc Esc picks a turn to rewind to.
Esc or Ctrl-C interrupts a running turn (the session is kept); what you type meanwhile is kept
(Enter queues it as the next message). Ctrl-O shows the last tool result in full. Ctrl-C twice
at an empty prompt, Ctrl-D or /exit quits."""


def run_interactive(args: argparse.Namespace) -> int:
    started = start(args, confirm_trust=ask_trust)
    assert started.config is not None  # a strict start-up loaded it
    try:
        app = App(started.config, started.store, args, environ=started.environ)
        return asyncio.run(app.main())
    finally:
        started.close()


def ask_trust(question: str) -> bool:
    """Before anything starts: when the folder's project files were left out because it is not
    trusted, ask the user (``question`` lists every item they would make take effect). Without
    a terminal, or on "no", the start-up's notice names what stays ignored."""
    import sys

    if not sys.stdin.isatty():
        return False
    try:
        answer = input(question)
    except EOFError:
        answer = ""
    return answer.strip().lower() in ("y", "yes")


#: What loads in the background once the first frame is drawn, in this order: the session and
#: what it brings, the question picker, Rich and the renderer (the banner needs them), then the
#: HTTP client (so the first request does not pay for it).
PRELOADED = ("reasonix.app.session", "reasonix.cli.picker", "reasonix.cli.render", "httpx")


class Preload:
    """The one place that imports in the background: a single thread loads :data:`PRELOADED`
    one after the other while the user types, and the main thread waits for it (:meth:`wait`)
    before it imports anything itself. Two threads importing at once can meet inside a cycle
    of package imports (our packages' ``__init__`` modules import their submodules, which
    import the package), where Python hands one of them a module that is not, or never will
    be, whole; ``module 'reasonix.app.session' has no attribute 'AgentSession'`` was seen once
    at start-up when three threads imported at once (``tests/test_background_imports.py``)."""

    def __init__(self) -> None:
        import threading

        self._done = threading.Event()
        self._started = False
        self.failure: BaseException | None = None

    def start(self) -> None:
        # asyncio's default executor, which the main thread's loop may start while the
        # preload runs (to_thread): loaded here, before, so the main thread imports nothing then
        import concurrent.futures.thread  # noqa: F401
        import threading

        self._started = True
        threading.Thread(target=self._load, name="reasonix-preload", daemon=True).start()

    def _load(self) -> None:
        import importlib

        try:
            for name in PRELOADED:
                try:
                    importlib.import_module(name)
                except Exception:
                    if name != "httpx":  # the first request says what is wrong with it
                        raise
        except BaseException as exc:
            self.failure = exc
        finally:
            self._done.set()

    def wait(self) -> None:
        """Block until the background imports are over (at once when they never started)."""
        if self._started:
            self._done.wait()

    async def loaded(self) -> None:
        """Wait without blocking the prompt; raise what stopped the imports."""
        if not self._done.is_set():
            await asyncio.to_thread(self._done.wait)
        if self.failure is not None:
            raise self.failure


class _OpenFailed(Exception):
    """Ends the first prompt when the session could not be opened (``main`` says why)."""


class _PickRewind(Exception):
    """Ends the prompt on Esc Esc: ``main`` opens the rewind picker (the draft is kept)."""


class KeyWatcher:
    """While a turn runs no prompt owns the terminal: read it in cbreak mode so a lone Esc
    interrupts the turn (even while the model is still reasoning), and keep what the user types
    meanwhile: the line being typed (``typed``) and the lines ended with Enter (``queued``),
    sent as the next messages. Key sequences that start with Esc (arrows, function keys) are
    ignored; Ctrl-C still arrives as SIGINT."""

    def __init__(
        self,
        on_escape: Callable[[], None],
        on_change: Callable[[], None],
        on_back_tab: Callable[[], None] | None = None,
    ) -> None:
        import codecs

        self.on_escape = on_escape
        self.on_change = on_change
        self.on_back_tab = on_back_tab  # Shift+Tab: the next permission mode
        self.typed = ""
        self.queued: list[str] = []
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._saved: list[Any] | None = None
        self._fd = -1

    def start(self) -> None:
        import sys

        if self._saved is not None or not sys.stdin.isatty():
            return
        import termios
        import tty

        self._fd = sys.stdin.fileno()
        try:
            self._saved = termios.tcgetattr(self._fd)
            tty.setcbreak(self._fd)
            asyncio.get_running_loop().add_reader(self._fd, self._read)
        except (OSError, termios.error, NotImplementedError, RuntimeError):
            self.stop()

    def _read(self) -> None:
        import os

        try:
            data = os.read(self._fd, 1024)
        except OSError:
            return
        self.feed(data)

    def feed(self, data: bytes) -> None:
        """Interpret bytes read from the terminal (public for the key-handling tests)."""
        i = 0
        while i < len(data):
            byte = data[i : i + 1]
            if byte == b"\x1b":
                if i + 1 == len(data):
                    self.on_escape()
                    return
                nxt = data[i + 1 : i + 2]
                if nxt == b"\x1b":  # Esc Esc in one read: the first one interrupts
                    self.on_escape()
                    i += 1
                    continue
                if nxt in (b"[", b"O"):
                    # CSI / SS3 sequence: skip to its final byte (a letter or ~).
                    j = i + 2
                    while j < len(data) and not (0x40 <= data[j] <= 0x7E and data[j] != 0x5B):
                        j += 1
                    if data[i + 1 : j + 1] == b"[Z" and self.on_back_tab is not None:
                        self.on_back_tab()
                    i = j + 1
                else:
                    i += 2  # Alt+key: not text
                continue
            if byte in (b"\r", b"\n"):
                if self.typed.strip():
                    self.queued.append(self.typed.strip())
                self.typed = ""
            elif byte in (b"\x7f", b"\x08"):
                self.typed = self.typed[:-1]
            elif byte == b"\x15":  # Ctrl-U: clear the line
                self.typed = ""
            elif data[i] >= 0x20 or byte == b"\t":
                self.typed += self._decoder.decode(byte)
            i += 1
        self.on_change()

    def take(self) -> tuple[list[str], str]:
        """What was typed ahead (queued lines, the unfinished line), cleared."""
        queued, typed = self.queued, self.typed
        self.queued, self.typed = [], ""
        return queued, typed

    def stop(self) -> None:
        if self._saved is None:
            return
        import termios

        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            asyncio.get_running_loop().remove_reader(self._fd)
        with contextlib.suppress(OSError, termios.error):
            termios.tcsetattr(self._fd, termios.TCSADRAIN, self._saved)
        self._saved = None


def _shown(text: str) -> str:
    """Outside text inside our markup: made terminal-safe, then markup-escaped."""
    return _escaped(terminal_safe(text))


def _escaped(text: str) -> str:
    """``text`` markup-escaped for Rich (which loads on first use)."""
    from rich.markup import escape

    return escape(text)


def _whole_subject(subject: str, limit: int = 2000) -> str:
    """What is being approved, shown whole; a very long one keeps its head and its tail and says
    how much is not shown, so nothing can hide at the end of a long command."""
    if len(subject) <= limit:
        return subject
    head, tail = subject[: limit * 3 // 4], subject[-limit // 4 :]
    return f"{head} … [{len(subject) - len(head) - len(tail)} characters not shown] … {tail}"


class PromptApprover:
    """Asks the user about a tool call, showing what will happen (the command exactly as it
    will run, an edit's diff, a new file's head): allow once, allow for the session under a
    proposed rule the user can accept or edit (``a bash(git *)``), or deny (a reason typed
    after ``n`` goes back to the model)."""

    def __init__(self, app: App) -> None:
        self.app = app

    async def approve(self, request: ApprovalRequest) -> ApprovalAnswer:
        from reasonix.app.approvals import proposed_session_rules
        from reasonix.safety.permissions import ApprovalAnswer, Rule

        app = self.app
        app.renderer.end_line()
        app.console.print(
            f"[bold yellow]approval needed[/bold yellow] {_shown(request.reason)}",
            highlight=False,
        )
        from rich.text import Text

        head = Text(f"  {request.tool}: ", style="bold")
        head.append(_whole_subject(request.subject))
        app.console.print(head, highlight=False)
        if request.preview:
            app.renderer.preview(request.preview)
        proposed = proposed_session_rules(request)
        for line in approval_choices(proposed):
            app.console.print(line, markup=False, highlight=False)
        while True:
            answer = await app.ask("Allow? [y/a/n] ")
            if answer is None:  # Ctrl-C / Ctrl-D at the question: stop the turn too
                app.interrupt_turn()
                return ApprovalAnswer.deny("the user interrupted the turn")
            word, _, rest = answer.strip().partition(" ")
            word, rest = word.lower(), rest.strip()
            if word in ("y", "yes", "once"):
                return ApprovalAnswer.allow_once()
            if word in ("a", "s", "always", "session"):
                if not rest and not proposed:
                    app.console.print(
                        "No rule is proposed for this command: answer y, a <rule> or n.",
                        markup=False,
                    )
                    continue
                if not rest:
                    return ApprovalAnswer.allow_session(*proposed)
                try:
                    Rule(rest, "allow")
                except ReasonixError as exc:
                    app.console.print(str(exc), markup=False)
                    continue
                return ApprovalAnswer.allow_session(rest)
            if word in ("n", "no", "deny"):
                return ApprovalAnswer.deny(rest)
            app.console.print("Answer y, a (or a <rule>) or n.")


def approval_choices(proposed: tuple[str, ...], width: int = 80) -> list[str]:
    """The answers to an approval, one per line, wrapped between words to fit ``width``
    columns (the rules a long command gets would otherwise run past a terminal's edge)."""
    import textwrap

    def wrapped(text: str, first: str, rest: str) -> list[str]:
        return textwrap.wrap(
            text,
            width,
            initial_indent=first,
            subsequent_indent=rest,
            break_long_words=False,
            break_on_hyphens=False,
        )

    lines = ["  [y] allow once"]
    if proposed:
        rules = printable(", ".join(proposed))
        lines += wrapped(f"for this session: {rules}", "  [a] ", "      ")
        lines.append("      (a <rule> allows by another rule)")
    else:
        lines += wrapped(
            "a <rule>: for this session, by a rule you write (none is proposed: no rule "
            "covers exactly this command)",
            "  [a] ",
            "      ",
        )
    lines += wrapped("deny (n <reason> tells the model why)", "  [n] ", "      ")
    return lines


class SlashCompleter(Completer):
    """Tab completion: slash command names (from the one command table,
    :mod:`reasonix.app.commands`, and the session's custom commands) and paths, for
    ``@mentions`` and words that look like paths."""

    def __init__(self, app: App | Path) -> None:
        # An App also offers the session's custom commands; a bare folder only the built-ins.
        self.app = app if isinstance(app, App) else None
        self.workspace = app if isinstance(app, Path) else Path.cwd()

    def get_completions(
        self, document: Document, complete_event: CompleteEvent
    ) -> Iterable[Completion]:
        text = document.text_before_cursor
        rt = self.app.runtime if self.app is not None else None
        if text.startswith("/") and " " not in text:
            # Shown as usage shows them (``/resume <ID>``), with their help line.
            names = [(c.name, c.args, c.help) for c in commands.listing("app")]
            if rt is not None:
                names += [(name, "", "custom command") for name in rt.commands]
            for name, args, meta in names:
                if name.startswith(text[1:].lower()):
                    shown = f"/{name} {fit(args, 20)}".rstrip()
                    yield Completion(
                        "/" + name, start_position=-len(text), display=shown, display_meta=meta
                    )
            return
        if text.startswith(RESUME):
            if rt is not None:
                yield from self._session_ids(rt, text[len(RESUME) :])
            return
        word = text.split(" ")[-1] if text else ""
        mention = word.startswith("@")
        path = word[1:] if mention else word
        if not (mention or "/" in path or path.startswith(".") or text.startswith("/")):
            return
        yield from self._paths(path, mention)

    def _session_ids(self, rt: AgentSession, typed: str) -> Iterable[Completion]:
        """``/resume <ID>``: this folder's sessions, most recent first, with their titles."""
        import time

        typed = typed.strip()
        for info in rt.history.sessions():
            if info.id.startswith(typed) and info.id != rt.session_id:
                when = time.strftime("%Y-%m-%d %H:%M", time.localtime(info.updated_at))
                title = printable(info.title or "(untitled)")
                yield Completion(
                    info.id, start_position=-len(typed), display_meta=f"{fit(title, 48)} · {when}"
                )

    def _paths(self, typed: str, mention: bool) -> Iterable[Completion]:
        folder, _, stem = typed.rpartition("/")
        base = (self.workspace / folder) if folder else self.workspace
        try:
            entries = sorted(base.iterdir(), key=lambda p: p.name)
        except OSError:
            return
        for entry in entries:
            name = entry.name
            if not name.startswith(stem) or (name.startswith(".") and not stem.startswith(".")):
                continue
            done = (folder + "/" if folder else "") + name + ("/" if entry.is_dir() else "")
            yield Completion(
                ("@" if mention else "") + done,
                start_position=-(len(typed) + (1 if mention else 0)),
                display=name + ("/" if entry.is_dir() else ""),
            )


class App:
    """One interactive session; see the module docstring."""

    def __init__(
        self,
        config: Config,
        store: SessionStore,
        args: argparse.Namespace,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        import sys

        self.config = config
        self.store = store
        self.args = args
        self.environ = environ
        self._status_file = StatusFile(sys.stdout) if sys.stdout.isatty() else None
        self._console: Console | None = None
        self._renderer: TerminalRenderer | None = None
        self._preload = Preload()
        self.runtime: AgentSession | None = None
        self._opening: asyncio.Task[None] | None = None
        self._turn: Turn | None = None
        #: a running ``!command`` (:mod:`reasonix.cli.inline`; Ctrl-C stops it)
        self.shell_task: ShellCommand | None = None
        self._quit_armed = False
        self._quit_now = False
        self._keys = KeyWatcher(
            self.interrupt_turn, self._typed_changed, lambda: self.cycle_mode(during_turn=True)
        )
        # `reasonix "explain this project"`: the first message, sent as if typed.
        first = getattr(args, "first_message", None)
        self._queued: list[str] = [first] if first else []
        # --append-system-prompt: rides at the tail of the first turn (the prefix stays fixed).
        self._appendix: str | None = getattr(args, "append_system_prompt", None)
        self._draft = ""
        self._revision = ""  # what to change in a declined plan
        self.session: PromptSession[str] = PromptSession(
            history=_history(),
            key_bindings=self._bindings(),
            bottom_toolbar=self.toolbar,
            # The command menu opens as `/` is typed (and session ids after `/resume `);
            # otherwise Tab completes and the arrows search the history by prefix (prompt_toolkit
            # completes while typing only where history search is off).
            enable_history_search=~self._menu_open,
            completer=SlashCompleter(self),
            complete_while_typing=self._menu_open,
        )

    @property
    def _menu_open(self) -> Condition:
        """The prompt's text is a command name being typed, or ``/resume``'s argument."""

        def typing_command() -> bool:
            text = get_app().current_buffer.text
            return text.startswith("/") and (" " not in text or text.startswith(RESUME))

        return Condition(typing_command)

    @property
    def console(self) -> Console:
        """Rich's console (on a terminal it writes through the status line), made on first use:
        after the first frame (see :meth:`_header`)."""
        if self._console is None:
            self._preload.wait()  # never import beside the background imports
            from rich.console import Console

            file = cast(IO[str], self._status_file) if self._status_file is not None else None
            self._console = Console(highlight=False, file=file)
        return self._console

    @property
    def renderer(self) -> TerminalRenderer:
        if self._renderer is None:
            self._preload.wait()
            from reasonix.cli.render import TerminalRenderer

            self._renderer = TerminalRenderer(self.console)
        return self._renderer

    @property
    def status(self) -> LiveStatus | None:
        return self._status_file.status if self._status_file is not None else None

    # -- prompt ------------------------------------------------------------------------------------

    def _bindings(self) -> KeyBindings:
        kb = KeyBindings()

        @kb.add("escape", "enter")
        def _newline(event: KeyPressEvent) -> None:
            event.current_buffer.insert_text("\n")

        @kb.add("escape", "escape")
        def _rewind(event: KeyPressEvent) -> None:
            self._draft = event.current_buffer.text
            event.app.exit(exception=_PickRewind())

        @kb.add("enter")
        def _submit(event: KeyPressEvent) -> None:
            buf = event.current_buffer
            if buf.complete_state is not None and buf.complete_state.current_completion:
                buf.apply_completion(buf.complete_state.current_completion)
                return
            if buf.text.endswith("\\") and buf.cursor_position == len(buf.text):
                buf.delete_before_cursor(1)
                buf.insert_text("\n")
                return
            buf.validate_and_handle()

        @kb.add("c-c")
        def _interrupt(event: KeyPressEvent) -> None:
            buf = event.current_buffer
            if buf.text:
                buf.reset()
                return
            event.app.exit(exception=KeyboardInterrupt())

        @kb.add("tab")
        def _complete(event: KeyPressEvent) -> None:
            # prompt_toolkit's own Tab drops its request while the menu of what was just
            # typed is still being made (a fast "/expa<Tab>" did nothing): complete at once.
            buf = event.current_buffer
            if buf.complete_state is not None:
                buf.complete_next()
                return
            from prompt_toolkit.completion.base import get_common_complete_suffix

            done = CompleteEvent(completion_requested=True)
            found = list(SlashCompleter(self).get_completions(buf.document, done))
            if len(found) == 1:
                buf.apply_completion(found[0])
            elif found and (common := get_common_complete_suffix(buf.document, found)):
                buf.insert_text(common)
            else:
                buf.start_completion(insert_common_part=True)

        @kb.add("s-tab")
        def _mode(event: KeyPressEvent) -> None:
            buf = event.current_buffer
            if buf.complete_state is not None:
                buf.complete_previous()
                return
            self.cycle_mode()
            event.app.invalidate()

        @kb.add("c-o")
        def _expand(event: KeyPressEvent) -> None:
            from prompt_toolkit.application import run_in_terminal

            run_in_terminal(lambda: self.renderer.expand(None))

        return kb

    def cycle_mode(self, *, during_turn: bool = False) -> None:
        """Shift+Tab: the next permission mode, shown in the toolbar (said on a line while a
        turn runs, when no toolbar is drawn)."""
        if self.runtime is None:
            return
        mode = self.runtime.cycle_mode()
        if during_turn:
            self.renderer.line(f"mode: {mode} (from the next tool call)", "dim")

    def toolbar(self) -> FormattedText | HTML:
        """The idle status line, fitted to the terminal: mode, then per role its model, context
        use, cache hits and cost this run, then the session's total."""
        rt = self.runtime
        if rt is None:
            return HTML("starting…")
        from prompt_toolkit.application import get_app_or_none

        app = get_app_or_none()
        width = app.output.get_size().columns if app is not None else 80
        return FormattedText([("", " " + toolbar_text(rt, width - 2) + " ")])

    async def ask(self, question: str) -> str | None:
        """A one-line answer from the user during a turn; None on Ctrl-C/Ctrl-D."""

        async def prompt() -> str | None:
            try:
                return await PromptSession[str]().prompt_async(question)
            except (KeyboardInterrupt, EOFError):
                return None

        return await self.exclusive(prompt)

    async def exclusive(self, work: Callable[[], Awaitable[T]]) -> T:
        """Run ``work`` (a prompt, the question picker) with the keys to itself."""
        watching = self._turn is not None and not self._turn.done()
        self.renderer.end_line()
        self._keys.stop()  # the prompt needs the keys
        status = self.status
        if status is not None:
            status.pause()
        try:
            return await work()
        finally:
            # prompt_toolkit removes the loop's SIGINT handler when its prompt ends.
            self.arm_interrupt()
            if watching:
                self._keys.start()
                if status is not None:
                    status.resume()

    def _said(self, text: str) -> None:
        self.console.print(f"[dim]{_escaped(printable(text))}[/dim]")

    def _typed_changed(self) -> None:
        status = self.status
        if status is not None:
            status.typed, status.queued = self._keys.typed, list(self._keys.queued)
            status.redraw()

    # -- main loop ---------------------------------------------------------------------------------

    async def main(self) -> int:
        # The prompt comes first: the session (and the subsystems it imports, the MCP servers
        # it starts) opens in the background while the user types the first task, which waits
        # for it only if it is not ready yet (so the first request has every tool).
        self._header()
        # Both start once the first frame is drawn (the task runs when the prompt first waits
        # for a key): a thread importing beside the prompt would take the GIL from its drawing.
        self._opening = asyncio.create_task(self._open())
        try:
            while not self._quit_now:
                self.arm_interrupt()
                if self._queued:
                    text = self._queued.pop(0)
                    self.renderer.line(f"› {text}", "bold")
                else:
                    draft, self._draft = self._draft, ""
                    try:
                        text = await self.session.prompt_async("› ", default=draft)
                    except KeyboardInterrupt:
                        if self._quit_armed:
                            break
                        self._quit_armed = True
                        self.console.print("[dim](Ctrl-C again or /exit to quit)[/dim]")
                        continue
                    except EOFError:
                        break
                    except _OpenFailed:
                        break
                    except _PickRewind:
                        if not await self._ready():
                            break
                        from reasonix.cli.pickers import rewind_picker

                        await rewind_picker(self)
                        continue
                self._quit_armed = False
                text = text.strip()
                if not text:
                    continue
                if not await self._ready():
                    break
                if text.startswith(("!", "#")):
                    from reasonix.cli import inline

                    if await inline.handle(self, text):
                        continue
                if text.startswith("/"):
                    if await self.command(text) == "exit":
                        break
                    continue
                if self._appendix:
                    from reasonix.app.headless import append_instructions

                    text, self._appendix = append_instructions(text, self._appendix), None
                attached = self._attach(text)
                if attached is not None:
                    turn = _start_turn(attached.text, images=attached.images, request=text)
                    await self.run_turn(turn)
        finally:
            with contextlib.suppress(NotImplementedError, RuntimeError):
                asyncio.get_running_loop().remove_signal_handler(signal.SIGINT)
            # Never leave MCP servers half started: let the opening finish, then close.
            with contextlib.suppress(Exception):
                await self._opening
            if self.runtime is not None:
                await self.runtime.aclose()
                self.console.print(f"[dim]Session {self.runtime.session_id} saved.[/dim]")
        failure = self._opening.exception() if not self._opening.cancelled() else None
        if isinstance(failure, ReasonixError):
            raise UsageError(str(failure)) from None
        if failure is not None:
            raise failure
        return EXIT_OK

    async def _open(self) -> None:
        """Import the session's subsystems (in the background, so the prompt stays live) and
        open the session; then show the banner above the prompt. A failure ends the prompt."""
        self._preload.start()
        try:
            await self._preload.loaded()
            from reasonix.app.session import AgentSession
            from reasonix.cli.picker import QuestionPicker

            self.runtime = await AgentSession.open(
                self.config,
                Path.cwd(),
                store=self.store,
                approver=PromptApprover(self),
                sink=self,
                resume_id=self.args.resume,
                continue_last=self.args.continue_last,
                plan_approver=self.approve_plan,
                environ=self.environ,
                asker=QuestionPicker(self.exclusive, self.ask, self._said),
            )
        except BaseException:
            app = self.session.app
            if app.is_running:
                app.exit(exception=_OpenFailed())
            raise
        self._above(self._opened)

    async def _ready(self) -> bool:
        """Wait for the session to open (saying so when it is not open yet); False if it
        failed (``main`` reports why)."""
        opening = self._opening
        if opening is not None and not opening.done():
            self.console.print("[dim]waiting for the session to open…[/dim]")
            with contextlib.suppress(Exception):
                await asyncio.shield(opening)
        return self.runtime is not None

    def _above(self, show: Callable[[], None]) -> None:
        """Print with ``show`` above a live prompt (or right away when none is on screen)."""
        app = self.session.app
        if app.is_running:
            from prompt_toolkit.application import run_in_terminal

            run_in_terminal(show)
        else:
            show()

    def _header(self) -> None:
        """What is known before the session opens: shown at once, never a blank screen. Drawn
        by prompt_toolkit, like the prompt under it, so that Rich is not loaded for it."""
        from prompt_toolkit import print_formatted_text

        from reasonix._version import __version__

        print_formatted_text(
            FormattedText(
                [
                    ("bold", "reasonix"),
                    ("", f" {__version__} · "),
                    ("dim", "/help for commands; Esc+Enter for a new line"),
                ]
            )
        )

    def _opened(self) -> None:
        rt = self.runtime
        assert rt is not None
        self.renderer.set_models(rt.models())
        self._banner()
        if questions := rt.pending_questions():
            from reasonix.tools.ask import describe_questions

            lines = ["The model asked (type your answer):", *describe_questions(questions)]
            self.console.print(terminal_safe("\n".join(lines)), markup=False)

    def _attach_parts(self, text: str) -> tuple[str, tuple[ImagePart, ...]]:
        """A command's task with its ``@path`` mentions attached (text at its tail, images as
        image parts of its turn); ValueError (said by the command's answer) for an image that
        may not be sent."""
        from reasonix.app.mentions import attach_mentions

        attached = attach_mentions(text, Path.cwd())
        if attached.refused:
            raise ValueError(attached.refused)
        self._said_attached(attached)
        return attached.text, attached.images

    def _attach(self, text: str) -> Attached | None:
        """``@path`` mentions and pasted image paths: attach the files (text at the tail of the
        message, images as image parts), and say so; None when an image is refused (said)."""
        from reasonix.app.mentions import attach_mentions

        attached = attach_mentions(text, Path.cwd())
        if attached.refused:
            self.renderer.line(attached.refused, "red")
            return None
        self._said_attached(attached)
        return attached

    def _said_attached(self, attached: Attached) -> None:
        images = {image.name for image in attached.images}
        for path in attached.paths:
            kind = " (image)" if Path(path).name in images else ""
            self.renderer.line(f"attached @{path}{kind}", "dim")
        for note in attached.notes:
            self.renderer.line(note, "yellow")

    def _banner(self) -> None:
        rt = self.runtime
        assert rt is not None
        models = ", ".join(f"{r} {m}" for r, m in rt.models().items())
        what = "resumed" if rt.resumed else "new"
        # Model names and the mode come from configuration files: shown, never obeyed.
        self.console.print(
            f"{_shown(models)} · mode {_shown(rt.mode)} · {what} session {_shown(rt.session_id)}"
        )
        if rt.bash.notice:
            self.console.print(f"[bold yellow]warning:[/bold yellow] {_escaped(rt.bash.notice)}")
        for problem in rt.mcp.problems():
            self.renderer.line(problem, "yellow")
        if rt.resumed:
            self._recap()

    def _recap(self) -> None:
        """A short recap of the last turns of a resumed session."""
        rt = self.runtime
        assert rt is not None
        from reasonix.app.recap import recap

        turns = recap(rt.history.marks, rt.controller.executor.session.snapshot(), turns=3)
        if not turns:
            return
        from rich.text import Text

        self.console.print(f"[dim]── recap: the last {len(turns)} turn(s)[/dim]")
        width = max(self.console.width - 4, 20)
        for user, answer in turns:
            # Stored text came from the user and the model: shown, never obeyed.
            self.console.print(Text("› " + fit(printable(user), width), style="bold"))
            if answer:
                self.console.print(Text("  " + fit(printable(answer), width), style="dim"))

    # -- turns -------------------------------------------------------------------------------------

    def emit(self, event: Any) -> None:
        if self._turn is None and self.session.app.is_running:
            # Between turns (the session opening, MCP servers starting) the prompt owns the
            # screen: print above it, not through it.
            self._above(lambda: self._show(event))
            return
        self._show(event)

    def _show(self, event: Any) -> None:
        status = self.status
        if status is not None and status.active:
            status.observe(event)
        self.renderer.emit(event)

    def arm_interrupt(self) -> None:
        """Route SIGINT (Ctrl-C while no prompt owns the terminal) to the running turn, or,
        between prompts, treat it like Ctrl-C at an empty prompt."""
        if self.shell_task is not None:  # a `!command` runs: Ctrl-C stops it
            from reasonix.cli.inline import cancel_on_interrupt

            cancel_on_interrupt(self.shell_task)
            return
        idle = self._turn is None or self._turn.done()
        loop = asyncio.get_running_loop()
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(
                signal.SIGINT, self._idle_interrupt if idle else self.interrupt_turn
            )

    def _idle_interrupt(self) -> None:
        if self._quit_armed:
            self._quit_now = True
            app = self.session.app
            if app.is_running:
                app.exit(exception=KeyboardInterrupt())
            return
        self._quit_armed = True
        self.console.print("[dim](Ctrl-C again or /exit to quit)[/dim]")

    def interrupt_turn(self) -> None:
        if self.runtime is not None:
            self.runtime.interrupt()

    async def run_turn(self, start: Callable[[AgentSession], Turn]) -> None:
        rt = self.runtime
        assert rt is not None
        self._turn = start(rt)
        self.arm_interrupt()
        status = self.status
        if status is not None:
            status.start()
        self._keys.start()
        try:
            outcome = await self._turn.result()
        except ReasonixError as exc:
            self.renderer.finish()
            self.console.print(f"[red]{_shown(str(exc))}[/red]")
            return
        finally:
            self._keys.stop()
            if status is not None:
                status.stop()
                status.typed, status.queued = "", []
            queued, typed = self._keys.take()
            self._queued.extend(queued)
            self._draft += typed
            self._turn = None
            self.arm_interrupt()
        self.renderer.finish()
        if outcome.interrupted:
            self.console.print(
                "[yellow]Interrupted.[/yellow] The session is kept; type to continue."
            )
            self._closing(outcome)
            return
        result = outcome.result
        spent = sum(c.cost for c in result.cost_by_role.values())
        tail = f"{result.stop_reason} · {outcome.requests} requests · ${spent:.4f}"
        if result.route != "executor_only":
            tail = f"{result.route} · " + tail
        self.console.print(f"[dim]── {tail}[/dim]")
        self._closing(outcome)
        # A refusal or an unfinished plan was said once, by its notice, as the turn ended.
        revision, self._revision = self._revision, ""
        if result.stop_reason == "plan_declined" and revision:
            self.console.print("[dim]Asking the planner for a revised plan…[/dim]")
            await self.run_turn(lambda session: session.revise_plan(revision))
        elif result.stop_reason in ("plan_declined", "plan_only") and rt.pending_plan:
            self.console.print(
                "[dim]The plan is kept: /approve runs it; /plan <what to change> revises it.[/dim]"
            )

    def _closing(self, outcome: TurnOutcome) -> None:
        """What the command that started the turn says now it ended (the core's words)."""
        if outcome.closing:
            self.renderer.line(outcome.closing)

    async def approve_plan(self, plan: Plan) -> bool:
        self.renderer.end_line()
        answer = await self.ask(
            "Run this plan? [y] yes  [n] no, keep it for /approve  "
            "(n <what to change> asks for a revised plan): "
        )
        if answer is None:
            return False
        word, _, rest = answer.strip().partition(" ")
        if word.lower() in ("y", "yes"):
            return True
        if rest.strip():
            self._revision = rest.strip()
        return False

    # -- slash commands ----------------------------------------------------------------------------

    async def command(self, line: str) -> str | None:
        """A slash command, answered from the one table (:mod:`reasonix.app.commands`); the
        app answers only the commands about its own screen."""
        rt = self.runtime
        assert rt is not None
        name, _, arg = line[1:].partition(" ")
        local = {"exit": self._exit, "expand": self._expand, "reasoning": self._reasoning}
        if name.lower() == "resume" and not arg.strip():
            from reasonix.cli.pickers import resume_picker

            picked = await resume_picker(self)
            if picked is None:
                return None
            line = f"/resume {picked}"  # through the table, as if typed
        compactions = self.renderer.compactions
        answer = await commands.answer(
            rt, line, "app", environ=self.environ, prepare=self._attach_parts
        )
        command = commands.command_for(name, "app")
        if command is not None and command.local and not answer.error:
            return local[command.name](arg.strip())
        if answer.text and self.renderer.compactions == compactions:  # not said by an event
            intro = f"{HELP_INTRO}\n\n" if command is not None and command.name == "help" else ""
            self.renderer.line(intro + answer.text, "red" if answer.error else "")
        if answer.turn is not None:
            try:
                await self.run_turn(answer.turn)
            except (ReasonixError, ValueError, OSError) as exc:  # it could not start
                self.renderer.line(str(exc), "red")
                return None
        if answer.switched:
            self._recap()
        return None

    def _exit(self, arg: str) -> str:
        return "exit"

    def _expand(self, arg: str) -> None:
        self.renderer.expand(int(arg) if arg else None)

    def _reasoning(self, arg: str) -> None:
        self.console.print(self.renderer.last_reasoning(), style="dim", markup=False)


def toolbar_text(rt: AgentSession, width: int) -> str:
    """The idle toolbar's text for ``rt``, at most ``width`` cells: the essentials first, and
    each role's detail shortened before anything is cut."""
    cost = rt.usage.cost()
    total = rt.usage.session_cost()
    roles = []
    for use in rt.usage.context_use():
        c = cost.get(use.role)
        hit = f"{c.hit_ratio * 100:.0f}%" if c and c.requests else "–"
        spent = f"${c.cost:.4f}" if c else "$0"
        percent = use.fraction * 100
        ctx = f"{percent:.1f}%" if 0 < percent < 10 else f"{percent:.0f}%"
        roles.append((use.role, use.model, ctx, hit, spent))
    from reasonix.app.jobs import jobs_badge

    head = f"{rt.mode}"
    if badge := jobs_badge(rt.jobs):  # beside the mode, so a narrow terminal still shows it
        head += f" │ {badge}"
    tail = f"session ${total:.4f}"
    for detail in range(3, -1, -1):
        parts = [head]
        for role, model, ctx, hit, spent in roles:
            bits = [role, model, f"ctx {ctx}", f"hit {hit}", spent]
            keep = {3: bits, 2: [role, f"ctx {ctx}", f"hit {hit}", spent], 1: [role, spent]}
            parts.append(" ".join(keep.get(detail, [role])))
        parts.append(tail)
        line = " │ ".join(parts)
        if cell_len(line) <= width:
            return line
    return fit(line, width)


def _start_turn(
    text: str,
    *,
    plan: bool | None = None,
    plan_only: bool = False,
    images: tuple[ImagePart, ...] = (),
    request: str | None = None,
) -> Callable[[AgentSession], Turn]:
    def start(session: AgentSession) -> Turn:
        return session.start_turn(
            text, plan=plan, plan_only=plan_only, images=images, request=request
        )

    return start


def _history() -> FileHistory | InMemoryHistory:
    path = default_store_path().parent / "history"
    try:
        # What the user typed may include secrets: the history is theirs alone.
        private_file(private_dir(path.parent) / path.name)
    except OSError:
        return InMemoryHistory()
    return FileHistory(str(path))
