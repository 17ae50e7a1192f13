"""The one table of slash commands every frontend reads.

Each command is declared once (:data:`COMMANDS`): its name, its arguments as usage shows them,
its help line, where it is meaningful, and what it does through the session façade. A frontend
hands a line to :func:`answer` and gets an :class:`Answer` back: text to show, and/or a turn to
run (a starter, so the frontend starts it the way it starts any turn). Usage text, argument
errors, ``/help`` and completion are generated from the table; custom commands (files in
``.reasonix/commands``) follow the table's rows.

A new command is a new row. A new frontend names itself (a :data:`Frontend`), shows
``answer(...).text`` and runs ``answer(...).turn``; commands marked ``local`` concern what one
frontend shows (its renderer) and are answered by it.

The records (:class:`Command`, :class:`Context`, :class:`Answer`, the frontends) live in
:mod:`reasonix.app.command_types`; a handler too long for this module lives beside the part
it drives and builds its Answer from there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from reasonix.app.command_types import (
    APP_ONLY,
    SHELL_HELP,
    SHELL_PREFIX,
    SHELL_WHERE,
    Answer,
    Command,
    Context,
    Frontend,
    Handler,
)
from reasonix.config.schema import PERMISSION_MODES

if TYPE_CHECKING:
    from reasonix.app.mentions import Prepared
    from reasonix.app.session import AgentSession
    from reasonix.app.turn import Turn
    from reasonix.messages import ImagePart
    from reasonix.store import SessionInfo

__all__ = [
    "COMMANDS",
    "Answer",
    "Command",
    "Context",
    "Frontend",
    "answer",
    "command_for",
    "help_lines",
    "is_command",
    "listing",
    "session_line",
]


def session_line(info: SessionInfo) -> str:
    """One line per stored session: id, when, message counts, status, title."""
    import time

    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(info.updated_at))
    counts = info.message_counts
    msgs = f"{counts.get('executor', 0)}+{counts.get('planner', 0)} msgs"
    title = info.title or "(untitled)"
    return f"{info.id}  {when}  {msgs:>12}  {info.status:<11}  {title}"


def _reply(text: str) -> Answer:
    return Answer(text)


def _say(query: Callable[[Context], str | Sequence[str]]) -> Handler:
    """A handler that shows what ``query`` returns (a text, or lines)."""

    async def handler(ctx: Context) -> Answer:
        out = query(ctx)
        return _reply(out if isinstance(out, str) else "\n".join(out))

    return handler


# -- the handlers -------------------------------------------------------------------------------


async def _help(ctx: Context) -> Answer:
    return _reply("\n".join(help_lines(ctx.session, ctx.frontend)))


async def _plan(ctx: Context) -> Answer:
    task, found = ctx.prepare(ctx.arg) if ctx.prepare else (ctx.arg, ())
    images = (*ctx.images, *found)

    # ``prepare`` attaches the @path files: the reviewer's request is the typed task
    typed = ctx.request if ctx.request is not None else ctx.arg if ctx.prepare else None

    def start(session: AgentSession) -> Turn:
        return session.start_turn(task, plan=True, images=images, request=typed)

    return Answer(turn=start)


async def _approve(ctx: Context) -> Answer:
    if ctx.session.pending_plan is None:
        return Answer("No plan is waiting; /plan <task> makes one.", error=True)
    return Answer(turn=lambda session: session.approve_plan())


async def _permissions(ctx: Context) -> Answer:
    words = (ctx.arg or "").split()
    if not words:
        return _reply("\n".join(ctx.session.permissions.lines()))
    if len(words) == 2 and words[0] == "revoke" and words[1].isdigit():
        return _reply(ctx.session.permissions.revoke(int(words[1])))
    return Answer("Usage: /permissions [revoke N]", error=True)


async def _mode(ctx: Context) -> Answer:
    return _reply(ctx.session.set_mode(ctx.arg or None))


async def _model(ctx: Context) -> Answer:
    session = ctx.session
    words = ctx.arg.split()
    if not words:
        lines = [f"{role}: {session.model_of(role) or 'disabled'}" for role in ROLES]
        lines.append("/model ROLE MODEL switches a role's model for the next turns.")
        return _reply("\n".join(lines))
    if len(words) == 1:
        words = ["executor", words[0]]
    if len(words) != 2 or words[0] not in ROLES:
        return Answer("Usage: /model [executor|planner] MODEL", error=True)
    return _reply(session.switch_model(words[0], words[1]))


ROLES = ("executor", "planner")


async def _cost(ctx: Context) -> Answer:
    return _reply(ctx.session.usage.cost_table() + "\n" + await ctx.session.usage.balance())


async def _goal(ctx: Context) -> Answer:
    from reasonix.app.goals import goal_command

    return goal_command(ctx)


async def _undo(ctx: Context) -> Answer:
    return _reply(ctx.session.history.undo(int(ctx.arg) if ctx.arg else 1))


async def _rewind(ctx: Context) -> Answer:
    from reasonix.app.history import rewind_command

    return rewind_command(ctx)


async def _turns(ctx: Context) -> Answer:
    marks = ctx.session.history.marks
    if not marks:
        return _reply("No turns yet.")
    return _reply("\n".join(f"{m.turn:>3}  {m.text[:70]}" for m in marks))


async def _diff(ctx: Context) -> Answer:
    import asyncio

    # git reads the snapshots (and waits for one a step is taking): off the event loop
    return _reply(await asyncio.to_thread(ctx.session.history.diff))


async def _compact(ctx: Context) -> Answer:
    return _reply(await ctx.session.compact())


async def _clear(ctx: Context) -> Answer:
    return _reply(await ctx.session.history.clear())


async def _sessions(ctx: Context) -> Answer:
    current = ctx.session.session_id
    lines = [
        f"* {session_line(info)}  (current)" if info.id == current else f"  {session_line(info)}"
        for info in ctx.session.history.sessions()
    ]
    return _reply("\n".join(lines) or "No stored sessions in this folder.")


async def _resume(ctx: Context) -> Answer:
    if not ctx.arg:  # the app shows a picker; elsewhere, the list to pick from
        return _reply((await _sessions(ctx)).text + "\n/resume ID switches to one.")
    return Answer(await ctx.session.history.resume(ctx.arg), switched=True)


async def _config(ctx: Context) -> Answer:
    from reasonix.config import render_config

    environ = ctx.environ if ctx.environ is not None else ctx.session.environ
    return _reply("\n".join(render_config(ctx.session.config, environ)))


async def _remember(ctx: Context) -> Answer:
    return _reply(f"Remembered in {ctx.session.remember(ctx.arg)}.")


async def _mcp(ctx: Context) -> Answer:
    words = ctx.arg.split()
    if words[:1] == ["restart"] and len(words) == 2:
        return _reply(await ctx.session.mcp.restart(words[1]))
    return _reply("\n".join(ctx.session.mcp.status()))


async def _agents(ctx: Context) -> Answer:
    from reasonix.app.agent_types import agent_type_lines

    return _reply("\n".join(agent_type_lines(ctx.session)))


async def _init(ctx: Context) -> Answer:
    from reasonix.app.init_command import init_command

    return await init_command(ctx)


async def _jobs(ctx: Context) -> Answer:
    from reasonix.app.jobs import jobs_command

    return await jobs_command(ctx)


#: Every built-in slash command, in /help order.
COMMANDS: tuple[Command, ...] = (
    Command("help", "", "this help", _help),
    Command(
        "plan",
        "<task>",
        "plan first (the planner model), then execute",
        _plan,
        arg="text",
        images=True,
    ),
    Command("approve", "", "carry out the plan that is waiting (declined or plan-only)", _approve),
    Command(
        "init",
        "[update]",
        "have the model study the repository and write AGENTS.md (shown for approval); "
        "update: propose edits to an existing one",
        _init,
        arg="optional",
    ),
    Command(
        "mode",
        "[MODE]",
        f"show or set the permission mode: {' | '.join(PERMISSION_MODES)}",
        _mode,
        arg="optional",
    ),
    Command(
        "model",
        "[ROLE MODEL]",
        "the models of each role, or switch ROLE to MODEL",
        _model,
        arg="optional",
    ),
    Command("cost", "", "tokens, cache hits and cost per role", _cost),
    Command(
        "context",
        "",
        "what fills each role's context window: system prompt, tools, messages by kind",
        _say(lambda ctx: ctx.session.usage.context_lines()),
    ),
    Command(
        "status",
        "",
        "session, models, mode, folder and the memory files read",
        _say(lambda ctx: ctx.session.status_lines()),
    ),
    Command(
        "permissions",
        "[revoke N]",
        "the mode and the rules in force, where each came from, and the reviewer's verdicts; "
        "revoke N forgets the reviewer's allow #N",
        _permissions,
        arg="optional",
    ),
    Command("todo", "", "the executor's todo list", _say(lambda ctx: ctx.session.todo())),
    Command(
        "goal",
        "<objective> [--budget USD] [--max-turns N] | status|pause|resume|clear",
        "work toward an objective over several turns, on its own; where it stands; pause, "
        "continue or drop it",
        _goal,
        arg="optional",
    ),
    Command(
        "expand",
        "[N]",
        "the last tool result in full, or result N (Ctrl-O)",
        None,
        arg="number",
        hint="N is a tool result number",
        where=APP_ONLY,
    ),
    Command(
        "undo",
        "[K]",
        "undo the last step (or K steps) that changed files",
        _undo,
        arg="number",
        hint="K is a number of steps",
    ),
    Command(
        "rewind",
        "[TURN] | --force PATH...",
        "undo the last turn (or TURN and after): files and talk; --force PATH after it",
        _rewind,
        arg="optional",
    ),
    Command("turns", "", "the turns of this session (for /rewind)", _turns),
    Command(
        "export",
        "[FILE]",
        "write the transcript as markdown (default reasonix-<session id>.md); never overwrites",
        _say(
            lambda ctx: f"Exported the transcript to {ctx.session.history.export(ctx.arg or None)}."
        ),
        arg="optional",
        paths=True,
    ),
    Command(
        "diff",
        "",
        "what this session changed in the files, as a unified diff",
        _diff,
    ),
    Command("compact", "", "summarise the executor's history to free context", _compact),
    Command("clear", "", "start a new session (the old one stays stored)", _clear, where=APP_ONLY),
    Command("sessions", "", "sessions of this folder", _sessions),
    Command(
        "resume", "[ID]", "switch to a stored session", _resume, arg="optional", where=APP_ONLY
    ),
    Command("config", "", "the effective configuration and where each value came from", _config),
    Command("reasoning", "", "the last reasoning in full", None, where=APP_ONLY),
    Command(
        "remember", "<note>", "save a note to REASONIX.md for this project", _remember, arg="text"
    ),
    Command("mcp", "[restart NAME]", "MCP server status, or restart one", _mcp, arg="optional"),
    Command(
        "skills",
        "",
        "the skills the model can load",
        _say(lambda ctx: ctx.session.skills_listing()),
    ),
    Command(
        "agents",
        "",
        "the subagent types the task tool offers, their tools and source",
        _agents,
    ),
    Command(
        "jobs",
        "[kill|keep ID]",
        "background jobs: list, stop one, or keep one after you quit",
        _jobs,
        arg="optional",
    ),
    Command("exit", "", "quit", None, where=APP_ONLY, aliases=("quit", "q")),
)

_BY_NAME: dict[str, Command] = {name: c for c in COMMANDS for name in (c.name, *c.aliases)}


def command_for(name: str, frontend: Frontend | None = None) -> Command | None:
    """The built-in command called ``name`` (or one of its aliases), if it is meaningful in
    ``frontend`` (any frontend when None)."""
    found = _BY_NAME.get(name.lower())
    if found is None or (frontend is not None and frontend not in found.where):
        return None
    return found


def listing(frontend: Frontend) -> list[Command]:
    """The built-in commands ``frontend`` offers, in /help order."""
    return [c for c in COMMANDS if frontend in c.where]


def help_lines(session: AgentSession | None, frontend: Frontend) -> list[str]:
    """``/help``'s table for ``frontend``, then the session's custom commands."""
    rows = [(f"/{c.name} {c.args}".rstrip(), c.help) for c in listing(frontend)]
    if frontend in SHELL_WHERE:  # ``!command``: not a slash command, offered beside them
        rows.append((f"{SHELL_PREFIX}<command>", SHELL_HELP))
    width = max(len(r) for r, _ in rows) + 2
    lines = [f"{row:<{width}}{text}" for row, text in rows]
    custom = [c.help_line() for c in session.commands.values()] if session is not None else []
    if custom:
        lines += ["", "Custom commands:", *custom]
    return lines


def is_command(session: AgentSession, line: str, frontend: Frontend) -> bool:
    """``line`` is a slash command ``frontend`` answers (built-in or custom), not a task."""
    name = _name(line)
    return name is not None and (
        command_for(name, frontend) is not None or name in session.commands
    )


def _name(line: str) -> str | None:
    stripped = line.strip()
    if not stripped.startswith("/") or stripped.startswith("//"):
        return None
    name = stripped[1:].partition(" ")[0].lower()
    return name or None


async def answer(
    session: AgentSession,
    line: str,
    frontend: Frontend,
    *,
    environ: Mapping[str, str] | None = None,
    prepare: Callable[[str], Prepared] | None = None,
    images: tuple[ImagePart, ...] = (),
    request: str | None = None,
) -> Answer:
    """Answer the command ``line`` (``/name args``) for ``frontend``. An unknown command, a
    bad argument or a failure is an Answer with ``error`` set (its text says what to type);
    a local command comes back as an Answer with no text and no turn (the frontend answers
    it: :func:`command_for` says which). ``images`` came with the line: a command that runs
    a task (``/plan``, a custom command) carries them in its turn; any other refuses them.
    ``request``: the user's own words when the frontend attached data to the line (see
    :class:`Context`). A turn the answer starts says the command's closing words in its
    outcome (``TurnOutcome.closing``)."""
    stripped = line.strip()
    name, _, arg = stripped[1:].partition(" ")
    name, arg = name.lower(), arg.strip()
    command = command_for(name, frontend)
    if command is None:
        if name in session.commands:
            custom_arg = arg

            def start(session: AgentSession) -> Turn:
                return session.start_command(name, custom_arg, images=images, request=request)

            return Answer(turn=start)
        return Answer(f"Unknown command /{name}; /help lists them.", error=True)
    problem = command.check(arg)
    if problem is not None:
        return Answer(problem, error=True)
    if images and not command.images:
        refused = f"/{command.name} takes no images (/plan and custom commands do); none sent"
        return Answer(refused, error=True)
    if command.handler is None:
        return Answer()
    from reasonix.errors import ReasonixError

    context = Context(session, arg, frontend, environ, prepare, images, request)
    try:
        return (await command.handler(context)).closed()
    except (ReasonixError, ValueError, OSError) as exc:
        return Answer(str(exc), error=True)
