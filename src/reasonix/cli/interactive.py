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
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.formatted_text import HTML, FormattedText
from prompt_toolkit.history import FileHistory, InMemoryHistory
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from rich.console import Console
from rich.markup import escape

from reasonix.app.goal import parse_goal_args
from reasonix.app.jobs import jobs_badge
from reasonix.app.session import AgentSession
from reasonix.app.turn import Turn
from reasonix.cli.commands import (
    EXIT_OK,
    UsageError,
    announce,
    hold_keys,
    load,
    open_store,
    require_credentials,
)
from reasonix.cli.picker import QuestionPicker, jobs_command
from reasonix.cli.render import TerminalRenderer
from reasonix.cli.sessions import session_line
from reasonix.config import Config
from reasonix.control.plan import Plan
from reasonix.errors import ReasonixError
from reasonix.safety.confinement import start_bwrap_probe
from reasonix.safety.permissions import ApprovalAnswer, ApprovalRequest
from reasonix.store import SessionStore, default_store_path
from reasonix.store.private import private_dir, private_file
from reasonix.terminal_text import printable, terminal_safe
from reasonix.tools.ask import describe_questions

T = TypeVar("T")

HELP = """\
Type a task and press Enter. New line: Esc then Enter, or end the line with a backslash (\\).
Esc or Ctrl-C interrupts a running turn (the session is kept); Ctrl-C twice at an empty
prompt, Ctrl-D or /exit quits.

/help                  this help
/plan <task>           plan first (the planner model), then execute
/approve               carry out the plan that is waiting (declined or plan-only)
/mode [MODE]           show or set the permission mode: ask | auto-edit | plan | yolo
/model                 the models of each role
/cost                  tokens, cache hits and cost per role
/todo                  the executor's todo list
/goal <objective> [--budget USD] [--max-turns N]
                       work toward an objective over several turns, on its own
/goal status|pause|resume|clear   where the goal stands; pause, continue or drop it
/undo [K]              undo the last step (or K steps) that changed files: files and conversation
/rewind [TURN]         undo the last turn (or TURN and after): files and conversation
/turns                 the turns of this session (for /rewind)
/compact               summarise the executor's history to free context
/clear                 start a new session (the old one stays stored)
/sessions              sessions of this folder
/resume <ID>           switch to a stored session
/config                the effective configuration and where each value came from
/reasoning             the last reasoning in full
/remember <note>       save a note to REASONIX.md for this project
/mcp [restart NAME]    MCP server status, or restart one
/skills                the skills the model can load
/jobs [kill|keep ID]   background jobs: list, stop one, or keep one after you quit
/exit                  quit"""


def run_interactive(args: argparse.Namespace) -> int:
    start_bwrap_probe()  # answers while the configuration loads
    config = ask_trust(args, load(args))
    require_credentials(config)
    environ = hold_keys(config)
    store = open_store()
    try:
        app = App(config, store, args, environ=environ)
        return asyncio.run(app.main())
    finally:
        store.close()


def ask_trust(args: argparse.Namespace, config: Config) -> Config:
    """Before anything starts: when the folder's project files were left out because it is not
    trusted, ask the user (listing what they would change); "yes" is remembered with a hash of
    the files and the config is loaded again with them. Without a terminal, or on "no", one
    notice names what stays ignored."""
    import sys

    from reasonix.config import user_config_path
    from reasonix.config.trust import TRUST_FILE, TrustStore, trust_question

    if config.trusted or not config.ignored or not sys.stdin.isatty():
        announce(config)
        return config
    preview = load(args, trust=True)
    try:
        answer = input(trust_question(config.ignored, preview.ignored))
    except EOFError:
        answer = ""
    if answer.strip().lower() not in ("y", "yes"):
        announce(config)
        return config
    TrustStore(user_config_path().parent / TRUST_FILE).remember(Path.cwd())
    announce(preview)
    return preview


def _warm_up_imports() -> None:
    """Load the HTTP client in the background while the user types the first task, so the
    prompt appears without waiting for it and the first request does not pay for it either."""
    import threading

    def load() -> None:
        with contextlib.suppress(Exception):
            import httpx  # noqa: F401

    threading.Thread(target=load, name="reasonix-warm-up", daemon=True).start()


class EscapeWatcher:
    """While a turn runs no prompt owns the terminal: read it in cbreak mode so a lone Esc
    interrupts the turn (even while the model is still reasoning). Key sequences that merely
    start with Esc (arrows, function keys) are ignored; Ctrl-C still arrives as SIGINT."""

    def __init__(self, on_escape: Callable[[], None]) -> None:
        self.on_escape = on_escape
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
            data = os.read(self._fd, 64)
        except OSError:
            return
        if data == b"\x1b":
            self.on_escape()

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
    return escape(terminal_safe(text))


def _whole_subject(subject: str, limit: int = 2000) -> str:
    """What is being approved, shown whole; a very long one keeps its head and its tail and says
    how much is not shown, so nothing can hide at the end of a long command."""
    if len(subject) <= limit:
        return subject
    head, tail = subject[: limit * 3 // 4], subject[-limit // 4 :]
    return f"{head} … [{len(subject) - len(head) - len(tail)} characters not shown] … {tail}"


class PromptApprover:
    """Asks the user about a tool call: allow once, allow for the session, or deny (a reason
    typed after ``n`` goes back to the model)."""

    def __init__(self, app: App) -> None:
        self.app = app

    async def approve(self, request: ApprovalRequest) -> ApprovalAnswer:
        app = self.app
        app.renderer.end_line()
        app.console.print(
            f"[bold yellow]approval needed[/bold yellow] {_shown(request.reason)}\n"
            f"  {_shown(request.tool)}: {_shown(_whole_subject(request.subject))}"
        )
        rules = printable(", ".join(request.session_rules))
        question = (
            f"Allow? [y] once  [a] for this session ({rules})  [n] deny (n <reason> tells the "
            "model why): "
        )
        while True:
            answer = await app.ask(question)
            if answer is None:  # Ctrl-C / Ctrl-D at the question: stop the turn too
                app.interrupt_turn()
                return ApprovalAnswer.deny("the user interrupted the turn")
            word, _, rest = answer.strip().partition(" ")
            word = word.lower()
            if word in ("y", "yes", "once"):
                return ApprovalAnswer.allow_once()
            if word in ("a", "s", "always", "session"):
                return ApprovalAnswer.allow_session()
            if word in ("n", "no", "deny"):
                return ApprovalAnswer.deny(rest.strip())
            app.console.print("Answer y, a or n.")


class SlashCompleter(Completer):
    """Completes ``/`` commands: the built-in ones and the custom ones of the session."""

    def __init__(self, app: App) -> None:
        self.app = app

    def get_completions(self, document: Document, complete_event: Any) -> Any:
        text = document.text_before_cursor
        if not text.startswith("/") or " " in text:
            return
        rt = self.app.runtime
        names = [line.split()[0] for line in HELP.splitlines() if line.startswith("/")]
        if rt is not None:
            names += [f"/{name}" for name in rt.commands]
        for name in dict.fromkeys(names):  # /goal has two help lines
            if name.startswith(text):
                yield Completion(name, start_position=-len(text))


class App:
    """One interactive session; see the module docstring."""

    def __init__(
        self,
        config: Config,
        store: SessionStore,
        args: argparse.Namespace,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.config = config
        self.store = store
        self.args = args
        self.environ = environ
        self.console = Console(highlight=False)
        self.renderer = TerminalRenderer(self.console)
        self.runtime: AgentSession | None = None
        self._turn: Turn | None = None
        self._active_role = "idle"
        self._quit_armed = False
        self._quit_now = False
        self._escape = EscapeWatcher(self.interrupt_turn)
        self.session: PromptSession[str] = PromptSession(
            history=_history(),
            key_bindings=self._bindings(),
            bottom_toolbar=self.toolbar,
            enable_history_search=True,
            # Tab completes; completing while typing would switch history search off.
            completer=SlashCompleter(self),
            complete_while_typing=False,
        )

    # -- prompt ------------------------------------------------------------------------------------

    def _bindings(self) -> KeyBindings:
        kb = KeyBindings()

        @kb.add("escape", "enter")
        def _newline(event: KeyPressEvent) -> None:
            event.current_buffer.insert_text("\n")

        @kb.add("enter")
        def _submit(event: KeyPressEvent) -> None:
            buf = event.current_buffer
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

        return kb

    def toolbar(self) -> FormattedText | HTML:
        """The status line: active role, then per role model, context use, cache hits, cost."""
        rt = self.runtime
        if rt is None:
            return HTML("starting…")
        cost = rt.cost()
        parts = [f" {self._active_role} │ mode {rt.mode}"]
        if badge := jobs_badge(rt.jobs):  # early, so a narrow terminal still shows it
            parts.append(badge)
        for use in rt.context_use():
            c = cost.get(use.role)
            hit = f"{c.hit_ratio * 100:.0f}%" if c and c.requests else "–"
            spent = f"${c.cost:.4f}" if c else "$0"
            parts.append(f"{use.role} {use.model} ctx {use.fraction * 100:.1f}% hit {hit} {spent}")
        return FormattedText([("", printable(" │ ".join(parts)) + " ")])

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
        self._escape.stop()  # the prompt needs the keys
        try:
            return await work()
        finally:
            # prompt_toolkit removes the loop's SIGINT handler when its prompt ends.
            self._arm_interrupt()
            if watching:
                self._escape.start()

    def _said(self, text: str) -> None:
        self.console.print(f"[dim]{escape(printable(text))}[/dim]")

    # -- main loop ---------------------------------------------------------------------------------

    async def main(self) -> int:
        try:
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
        except ReasonixError as exc:
            raise UsageError(str(exc)) from None
        self.renderer.set_models(self.runtime.models())
        self._banner()
        if questions := self.runtime.pending_questions():
            lines = ["The model asked (type your answer):", *describe_questions(questions)]
            self.console.print(terminal_safe("\n".join(lines)), markup=False)
        _warm_up_imports()
        try:
            while not self._quit_now:
                self._arm_interrupt()
                try:
                    text = await self.session.prompt_async("› ")
                except KeyboardInterrupt:
                    if self._quit_armed:
                        break
                    self._quit_armed = True
                    self.console.print("[dim](Ctrl-C again or /exit to quit)[/dim]")
                    continue
                except EOFError:
                    break
                self._quit_armed = False
                text = text.strip()
                if not text:
                    continue
                if text.startswith("/"):
                    if await self.command(text) == "exit":
                        break
                    continue
                await self.run_turn(_start_turn(text))
        finally:
            with contextlib.suppress(NotImplementedError, RuntimeError):
                asyncio.get_running_loop().remove_signal_handler(signal.SIGINT)
            await self.runtime.aclose()
            self.console.print(f"[dim]Session {self.runtime.session_id} saved.[/dim]")
        return EXIT_OK

    def _banner(self) -> None:
        rt = self.runtime
        assert rt is not None
        models = ", ".join(f"{r} {m}" for r, m in rt.models().items())
        what = "resumed" if rt.resumed else "new"
        # Model names and the mode come from configuration files: shown, never obeyed.
        self.console.print(
            f"[bold]reasonix[/bold] · {_shown(models)} · mode {_shown(rt.mode)} · {what} session "
            f"{_shown(rt.session_id)}\n[dim]/help for commands; Esc+Enter for a new line[/dim]"
        )
        if rt.bash.notice:
            self.console.print(f"[bold yellow]warning:[/bold yellow] {escape(rt.bash.notice)}")

    # -- turns -------------------------------------------------------------------------------------

    def emit(self, event: Any) -> None:
        role = getattr(event, "role", "")
        if role in ("executor", "planner"):
            self._active_role = role
        self.renderer.emit(event)

    def _arm_interrupt(self) -> None:
        """Route SIGINT (Ctrl-C while no prompt owns the terminal) to the running turn, or,
        between prompts, treat it like Ctrl-C at an empty prompt."""
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
        self._arm_interrupt()
        self._escape.start()
        try:
            outcome = await self._turn.result()
        except ReasonixError as exc:
            self.renderer.finish()
            self.console.print(f"[red]{_shown(str(exc))}[/red]")
            return
        finally:
            self._escape.stop()
            self._turn = None
            self._active_role = "idle"
            self._arm_interrupt()
        self.renderer.finish()
        if outcome.interrupted:
            self.console.print(
                "[yellow]Interrupted.[/yellow] The session is kept; type to continue."
            )
            return
        result = outcome.result
        spent = sum(c.cost for c in result.cost_by_role.values())
        tail = f"{result.stop_reason} · {outcome.requests} requests · ${spent:.4f}"
        if result.route != "executor_only":
            tail = f"{result.route} · " + tail
        self.console.print(f"[dim]── {tail}[/dim]")

    async def approve_plan(self, plan: Plan) -> bool:
        self.renderer.end_line()
        answer = await self.ask("Run this plan? [y/n]: ")
        return answer is not None and answer.strip().lower() in ("y", "yes")

    # -- slash commands ----------------------------------------------------------------------------

    async def command(self, line: str) -> str | None:
        rt = self.runtime
        assert rt is not None
        name, _, arg = line[1:].partition(" ")
        name, arg = name.lower(), arg.strip()

        def out(text: str, *, markup: bool = True, style: str = "") -> None:
            # Our own strings carry markup; text from elsewhere (markup=False) is made safe.
            shown = text if markup else terminal_safe(text)
            self.console.print(shown, markup=markup, style=style or None, highlight=False)

        try:
            if name in ("exit", "quit", "q"):
                return "exit"
            if name == "help":
                out(HELP, markup=False)
                custom = [c.help_line() for c in rt.commands.values()]
                if custom:
                    out("\nCustom commands:", markup=False)
                    for help_line in custom:
                        out(printable(help_line), markup=False)
            elif name == "jobs":
                for job_line in await jobs_command(rt, arg):
                    out(printable(job_line), markup=False)
            elif name == "skills":
                for skill_line in rt.skills_listing():
                    out(printable(skill_line), markup=False)
            elif name in rt.commands:
                await self.run_turn(_start_command(name, arg))
            elif name == "plan":
                if not arg:
                    out("Usage: /plan <task>")
                else:
                    await self.run_turn(_start_turn(arg, plan=True))
            elif name == "approve":
                if rt.pending_plan is None:
                    out("No plan is waiting; /plan <task> makes one.")
                else:
                    await self.run_turn(lambda session: session.approve_plan())
            elif name == "mode":
                out(rt.set_mode(arg or None), markup=False)
            elif name == "model":
                for role in ("executor", "planner"):
                    model = rt.model_of(role)
                    out(f"{role}: {model or 'disabled'}", markup=False)
                out(
                    "[dim]Models stay fixed within a session (switching would void the prompt "
                    "cache); start with --model / --planner-model to change them.[/dim]"
                )
            elif name == "cost":
                out(rt.cost_table(), markup=False)
                out(await rt.balance(), markup=False)
            elif name == "todo":
                out(rt.todo(), markup=False)
            elif name == "goal":
                await self.goal(arg, out)
            elif name == "turns":
                marks = rt.marks
                if not marks:
                    out("No turns yet.")
                for m in marks:
                    out(f"{m.turn:>3}  {m.text[:70]}", markup=False)
            elif name == "rewind":
                turn = int(arg) if arg else None
                out(rt.rewind(turn), markup=False)
            elif name == "undo":
                out(rt.undo(int(arg) if arg else 1), markup=False)
            elif name == "compact":
                out(await rt.compact(), markup=False)
            elif name == "clear":
                out(await rt.clear(), markup=False)
            elif name == "sessions":
                infos = rt.sessions()
                for info in infos:
                    mark = "*" if info.id == rt.session_id else " "
                    out(f"{mark} {session_line(info)}", markup=False)
            elif name == "resume":
                if not arg:
                    out("Usage: /resume <ID> (see /sessions)")
                else:
                    out(await rt.resume(arg), markup=False)
            elif name == "config":
                from reasonix.config import render_config

                out("\n".join(render_config(rt.config, self.environ)), markup=False)
            elif name == "reasoning":
                out(self.renderer.last_reasoning(), style="dim", markup=False)
            elif name == "remember":
                if not arg:
                    out("Usage: /remember <note>")
                else:
                    path = rt.remember(arg)
                    out(f"Remembered in {path}.", markup=False)
            elif name == "mcp":
                words = arg.split()
                if words[:1] == ["restart"] and len(words) == 2:
                    out(await rt.mcp_restart(words[1]), markup=False)
                else:
                    for status_line in rt.mcp_status():
                        out(status_line, markup=False)
            else:
                out(f"Unknown command /{name}; /help lists them.", markup=False)
        except (ReasonixError, ValueError, OSError) as exc:
            out(f"[red]{_shown(str(exc))}[/red]")
        return None

    async def goal(self, arg: str, out: Callable[..., None]) -> None:
        """``/goal``: the words are parsed by the core (:func:`parse_goal_args`)."""
        rt = self.runtime
        assert rt is not None
        verb, _, rest = arg.partition(" ")
        if verb in ("", "status"):
            out(rt.goal_status(), markup=False)
        elif verb == "pause":
            out(rt.pause_goal(), markup=False)
        elif verb == "clear":
            out(rt.clear_goal(), markup=False)
        else:
            await self.run_turn(_start_goal(verb, rest, arg))
            out(rt.goal_status(), markup=False)


def _start_goal(verb: str, rest: str, arg: str) -> Callable[[AgentSession], Turn]:
    resume = verb == "resume"
    wanted = parse_goal_args(rest if resume else arg, objective=not resume)

    def start(session: AgentSession) -> Turn:
        if resume:
            return session.resume_goal(budget_usd=wanted.budget_usd, max_turns=wanted.max_turns)
        return session.start_goal(
            wanted.objective, budget_usd=wanted.budget_usd, max_turns=wanted.max_turns
        )

    return start


def _start_turn(text: str, *, plan: bool | None = None) -> Callable[[AgentSession], Turn]:
    def start(session: AgentSession) -> Turn:
        return session.start_turn(text, plan=plan)

    return start


def _start_command(name: str, arguments: str) -> Callable[[AgentSession], Turn]:
    def start(session: AgentSession) -> Turn:
        return session.start_command(name, arguments)

    return start


def _history() -> FileHistory | InMemoryHistory:
    path = default_store_path().parent / "history"
    try:
        # What the user typed may include secrets: the history is theirs alone.
        private_file(private_dir(path.parent) / path.name)
    except OSError:
        return InMemoryHistory()
    return FileHistory(str(path))
