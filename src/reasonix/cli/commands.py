"""Argument parsing and dispatch for ``reasonix``; each command's module loads only when used.

It runs past 500 lines because :func:`build_parser` is the command line's whole grammar in one
place: every subcommand's flags beside the shared ones, so their names, help and defaults stay
consistent (Claude Code's invocations are read in :mod:`reasonix.cli.habits`, the run itself in
:mod:`reasonix.cli.headless`)."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from reasonix.app.launch import (
    EXIT_FAILURE,
    EXIT_NEEDS_INPUT,
    EXIT_OK,
    EXIT_REFUSED,
    EXIT_USAGE,
    open_store,
    overrides_from,
)
from reasonix.config.schema import PERMISSION_MODES
from reasonix.errors import StartupError

if TYPE_CHECKING:
    from reasonix.app.launch import Launch
    from reasonix.config import Config

__all__ = [
    "EXIT_FAILURE",
    "EXIT_NEEDS_INPUT",
    "EXIT_OK",
    "EXIT_REFUSED",
    "EXIT_USAGE",
    "UsageError",
    "build_parser",
    "dispatch",
    "open_store",
    "overrides_from",
]

#: A command-line or configuration problem: printed to stderr, exit code 2 (the start-up's
#: one error type).
UsageError = StartupError


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # No abbreviated long options: with --allowedTools at the top, `serve --all` read as an
        # ambiguous prefix of it (argparse matches prefixes across the whole command line).
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        # dispatch prints "reasonix: " before every usage error: the top-level parser adds
        # nothing, a subcommand's names itself ("run: ...").
        prog = self.prog.removeprefix("reasonix").strip()
        raise UsageError(f"{prog}: {message}" if prog else message)


def _session_flags(p: argparse.ArgumentParser, sub: bool = False) -> None:
    # A subcommand's copy of an option must not reset what was given before the command
    # (`reasonix -c run TASK`): argparse would overwrite it with the subparser's default.
    default: Any = argparse.SUPPRESS if sub else None
    g = p.add_mutually_exclusive_group()
    g.add_argument(
        "-c",
        "--continue",
        dest="continue_last",
        action="store_true",
        default=argparse.SUPPRESS if sub else False,
        help="continue the last session in this folder",
    )
    g.add_argument(
        "-r", "--resume", metavar="ID", default=default, help="resume a stored session (both roles)"
    )


def _config_flags(p: argparse.ArgumentParser, sub: bool = False) -> None:
    default: Any = argparse.SUPPRESS if sub else None
    p.add_argument(
        "-m", "--model", metavar="NAME", default=default, help="executor model (executor.model)"
    )
    p.add_argument(
        "--planner-model", metavar="NAME", default=default, help="planner model (planner.model)"
    )
    p.add_argument(
        "--effort",
        metavar="LEVEL",
        default=default,
        help="executor thinking effort: low|high|max|off; medium means high (executor.effort)",
    )
    p.add_argument(
        "--mode",
        metavar="MODE",
        default=default,
        help=f"permission mode: {'|'.join(PERMISSION_MODES)} (permissions.mode)",
    )
    p.add_argument(
        "--permission-mode",
        dest="mode",
        metavar="MODE",
        default=default,
        help="Claude Code's names for --mode: default|acceptEdits|plan|bypassPermissions "
        "(ask|auto-edit|plan|yolo)",
    )
    p.add_argument(
        "--max-steps",
        "--max-turns",
        dest="max_steps",
        metavar="N",
        default=default,
        help="executor model steps per turn (executor.max_steps)",
    )
    p.add_argument(
        "--allowedTools",
        "--allowed-tools",
        dest="allowed_tools",
        metavar="RULES",
        nargs="+",
        action="extend",
        default=default,
        help="add allow rules for this run: ours (read_file, bash(git log*)) or Claude Code's "
        "(Read, Bash(git log:*)); comma or space separated (permissions.allow)",
    )
    p.add_argument(
        "--disallowedTools",
        "--disallowed-tools",
        dest="disallowed_tools",
        metavar="RULES",
        nargs="+",
        action="extend",
        default=default,
        help="add deny rules for this run, in the same forms (permissions.deny)",
    )
    p.add_argument(
        "--add-dir",
        dest="add_dir",
        metavar="DIR",
        action="append",
        default=default,
        help="one more folder the tools may use; repeatable (workspace.roots)",
    )
    p.add_argument(
        "--append-system-prompt",
        metavar="TEXT",
        default=default,
        help="instructions added at the end of the first message (the cached prefix stays "
        "the same)",
    )
    p.add_argument(
        "--max-cost",
        metavar="USD",
        default=default,
        help="stop the session once it has spent this much (budget.max_session_usd)",
    )
    p.add_argument(
        "--sandbox",
        metavar="MODE",
        default=default,
        help="confine shell commands: auto|bwrap|off (sandbox.bash)",
    )
    p.add_argument(
        "--no-planner",
        action="store_true",
        default=argparse.SUPPRESS if sub else False,
        help="run the executor alone (planner.enabled = false)",
    )
    p.add_argument(
        "--trust",
        action="store_true",
        default=argparse.SUPPRESS if sub else False,
        help="trust this folder's project files (reasonix.toml, .mcp.json) for this run",
    )


def build_parser() -> argparse.ArgumentParser:
    """The full parser (``reasonix --help`` itself is served by the static text in main)."""
    parser = _Parser(
        prog="reasonix",
        description="A DeepSeek-native coding agent (interactive when no command is given).",
    )
    _session_flags(parser)
    _config_flags(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    run = sub.add_parser(
        "run",
        help="run one task headless",
        description=(
            "Run one task without a terminal UI and exit. Exit codes: 0 success, 1 failure "
            "(model/provider error, stalled, step limit), 2 usage/config error, 3 refused work "
            "(a permission denial stopped the task, or a plan was declined), 4 needs input "
            "(the model asked the user a question: the result lists it; answer with "
            'reasonix run -c "ANSWER"), 5 plan incomplete (the executor stopped with plan '
            "steps open: the result names them)."
        ),
    )
    run.add_argument(
        "task", nargs="?", help='the task, or "-" to read it from stdin (not with --goal)'
    )
    run.add_argument(
        "--output-format",
        choices=("text", "json", "stream-json"),
        default="text",
        help="text: the answer; json: one result object; stream-json: an init line, one "
        "event per line, then the result object (each line with its ts)",
    )
    run.add_argument(
        "--input-format",
        choices=("text", "stream-json"),
        default="text",
        help="text: the task argument (or stdin); stream-json: user messages on stdin, one "
        'JSON object a line ({"type":"user","message":{"content":"..."}} or {"text":"..."}), '
        "each run as the next turn of one session (needs --output-format stream-json)",
    )
    run.add_argument(
        "-y",
        "--yes",
        action="store_true",
        help="allow what would ask for approval (deny rules still apply) and approve plans",
    )
    run.add_argument(
        "--image",
        metavar="FILE",
        action="append",
        default=[],
        help="attach an image (JPEG, PNG, GIF or WebP; inline up to 32 MiB, through DeepSeek's "
        "Files API up to 64 MiB) to the task; repeatable; "
        "'-' reads the image bytes from standard input",
    )
    plan = run.add_mutually_exclusive_group()
    plan.add_argument("--plan", action="store_true", help="force the planner for this task")
    plan.add_argument(
        "--plan-only",
        action="store_true",
        help="only plan: print the plan and stop (run it later: reasonix -c, then /approve)",
    )
    run.add_argument(
        "--goal",
        metavar="OBJECTIVE",
        help="work toward OBJECTIVE over several turns until it is complete (with evidence), "
        "blocked, or a limit stops it",
    )
    run.add_argument("--goal-budget", metavar="USD", help="stop the goal once it spent this much")
    run.add_argument("--goal-max-turns", metavar="N", help="stop the goal after N turns")
    run.add_argument(
        "--goal-resume",
        action="store_true",
        help="continue the session's goal (with -c or -r after a pause, interrupt or limit)",
    )
    _session_flags(run, sub=True)
    _config_flags(run, sub=True)

    config = sub.add_parser(
        "config",
        help="print the effective configuration",
        description="Print the effective configuration and where each value came from.",
    )
    config.add_argument(
        "--keys", action="store_true", help="list every configuration key, its type and default"
    )
    _config_flags(config, sub=True)

    sessions = sub.add_parser(
        "sessions", help="list, show or export stored sessions", description="Stored sessions."
    )
    ssub = sessions.add_subparsers(dest="action", metavar="ACTION", parser_class=_Parser)
    ls = ssub.add_parser("list", help="sessions of this folder (most recent first)")
    ls.add_argument("--all", action="store_true", help="sessions of every folder")
    ls.add_argument("--limit", type=int, default=20, help="how many to list (default 20)")
    show = ssub.add_parser("show", help="a session's details and transcript")
    show.add_argument("id")
    export = ssub.add_parser("export", help="export a session")
    export.add_argument("id")
    export.add_argument("--format", choices=("json", "markdown"), default="json")
    export.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")

    rewind = sub.add_parser(
        "rewind",
        help="undo steps or turns of a session: files and conversation",
        description=(
            "Put the files back to how they were before a turn or a step, byte for byte, and "
            "cut the session's conversation to the same point; prints what was restored and "
            "what was not. With no options: the most recent session of this folder, back to "
            "before its last turn. Needs no API key."
        ),
    )
    rewind.add_argument("--session", metavar="ID", help="the session (default: this folder's last)")
    point = rewind.add_mutually_exclusive_group()
    point.add_argument(
        "--steps", metavar="K", type=int, help="undo the last K steps that may have changed files"
    )
    point.add_argument("--turn", metavar="N", type=int, help="go back to before turn N")
    point.add_argument(
        "--force",
        metavar="PATH",
        nargs="+",
        help="right after a rewind, put back the files it left alone (as /rewind --force)",
    )

    doctor = sub.add_parser(
        "doctor",
        help="check the setup",
        description=(
            "Check configuration, API keys (never printed), endpoints and model names, data "
            "folders, optional tools (rg, git, bwrap) and MCP servers. Exit code 1 if any "
            "problem is found; each problem says how to fix it."
        ),
    )
    _config_flags(doctor, sub=True)
    demo = sub.add_parser(
        "demo",
        help="an offline demo turn with a scripted model",
        description=(
            "Create a small project in a temporary folder, start local fake model servers with "
            "a scripted scenario, and run one dual-model turn through the real code paths "
            "(planner reads and plans; executor edits, runs the tests and signs the step off)."
        ),
    )
    demo.add_argument("--keep", action="store_true", help="keep the demo project folder")
    acp = sub.add_parser(
        "acp",
        help="serve an editor over the Agent Client Protocol (stdio)",
        description=(
            "Speak the Agent Client Protocol (ACP) on stdin/stdout, for editors such as Zed "
            "and for ACP clients and harnesses. Stdout carries only the protocol; logs go to "
            "stderr. The editor's working folder is the session's workspace; our own tools, "
            "permission rules and sandbox are used (the client's file-system and terminal "
            "capabilities are not)."
        ),
    )
    acp.add_argument("--log-file", metavar="FILE", help="write logs to FILE instead of stderr")
    acp.add_argument("-v", "--verbose", action="store_true", help="log each request")
    _config_flags(acp, sub=True)
    serve = sub.add_parser(
        "serve",
        help="a web dashboard of this folder's sessions",
        description=(
            "Serve a local web dashboard: the sessions list, live transcripts, plans, "
            "approvals, cost per role, and a box to send the next message. Prints one line, "
            "the URL to open (it carries a fresh access token). Listens on 127.0.0.1 unless "
            "--host says otherwise; a non-loopback address needs a password (--password-env)."
        ),
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    serve.add_argument(
        "--port", type=int, default=8765, metavar="N", help="port (default 8765; 0: any free one)"
    )
    serve.add_argument("--all", action="store_true", help="show every folder's sessions")
    serve.add_argument(
        "--password-env",
        metavar="VAR",
        help="environment variable holding the password ([serve] password_env)",
    )
    _config_flags(serve, sub=True)
    batch = sub.add_parser(
        "batch",
        help="run many tasks headless, locally or on a Ray cluster",
        description=(
            "Run every task of a JSONL file headless, each in an isolated copy of its "
            "repository, and write one row per task to OUT/results.jsonl as tasks finish "
            "(running again with the same --out skips finished tasks). A task line: "
            '{"id", "repo" (folder or git URL), "task"} plus optional "verify" (shell command, '
            'exit 0 = solved), "setup", and per-task "model", "planner_model", "effort", '
            '"planner" (true/false), "mode", "max_steps", "network" (true/false). setup and '
            "verify run in the sandbox of the agent's own commands, their output redacted; "
            '"unconfined": ["setup"] (or ["verify"], or true) runs that task\'s command outside '
            "it, and says so. Exit codes: 0 all tasks ran without error, 1 a task failed or "
            "the budget left tasks unstarted, 2 usage error."
        ),
    )
    batch.add_argument("tasks", metavar="TASKS.jsonl", help="the task file")
    batch.add_argument("--out", required=True, metavar="DIR", help="output folder")
    batch.add_argument(
        "--engine", choices=("local", "ray"), default="local", help="where tasks run"
    )
    batch.add_argument(
        "--concurrency", type=int, metavar="N", help="tasks at once (local 4, ray: CPUs)"
    )
    batch.add_argument(
        "--ray-address", metavar="ADDR", help="an existing Ray cluster (default: start one)"
    )
    batch.add_argument(
        "--ray-cpus", type=int, metavar="N", help="CPUs of the local Ray instance it starts"
    )
    batch.add_argument(
        "--yes", "-y", action="store_true", help="allow what would ask and approve plans"
    )
    batch.add_argument(
        "--timeout",
        type=float,
        default=1800.0,
        metavar="S",
        help="limit for each setup and verify command (default 1800 s)",
    )
    batch.add_argument(
        "--swe-bench", action="store_true", help="also write OUT/preds.json for SWE-bench"
    )
    _config_flags(batch, sub=True)
    return parser


def load(
    args: argparse.Namespace, workspace: Path | None = None, *, trust: bool | None = None
) -> Config:
    """The effective config with the command line's flags (see :func:`reasonix.app.launch.load`);
    ``--trust`` trusts the project folder for this run."""
    from reasonix.app.launch import load as load_config

    if getattr(args, "trust", False):
        trust = True
    return load_config(workspace or Path.cwd(), overrides_from(args), trust=trust)


def announce(config: Config) -> str:
    """Print the notice about project settings left out to stderr (once) and return it."""
    from reasonix.app.launch import print_notice, project_notice

    text = project_notice(config)
    if text:
        print_notice(text)
    return text


def start(args: argparse.Namespace, workspace: Path | None = None, **options: Any) -> Launch:
    """The one start-up (:func:`reasonix.app.launch.launch`) with the command line's flags."""
    from reasonix.app.launch import launch, print_notice

    options.setdefault("notify", print_notice)
    return launch(
        workspace or Path.cwd(),
        overrides_from(args),
        trust=True if getattr(args, "trust", False) else None,
        **options,
    )


#: Each command's entry point, ``module:function`` (imported only when the command runs).
#: The other frontends' entries live in their own packages: the CLI imports none of them.
ENTRIES: dict[str | None, str] = {
    None: "reasonix.cli.interactive:run_interactive",
    "run": "reasonix.cli.headless:run_headless",
    "config": "reasonix.cli.commands:run_config",
    "sessions": "reasonix.cli.sessions:run_sessions",
    "rewind": "reasonix.cli.rewind:run_rewind",
    "doctor": "reasonix.cli.doctor:run_doctor",
    "demo": "reasonix.cli.demo:run_demo",
    "acp": "reasonix.acp.main:run_acp",
    "serve": "reasonix.web.main:run_serve",
    "batch": "reasonix.batch.main:run_batch",
}


def run_config(args: argparse.Namespace) -> int:
    from reasonix.config import describe_keys, render_config
    from reasonix.redaction import redact
    from reasonix.terminal_text import terminal_safe

    if args.keys:
        print("\n".join(describe_keys()))
        return EXIT_OK
    config = load(args)
    announce(config)
    print(terminal_safe(redact("\n".join(render_config(config)))))
    return EXIT_OK


def dispatch(argv: Sequence[str]) -> int:
    """Parse ``argv`` and run the command; returns the exit code."""
    parser = build_parser()
    try:
        from reasonix.cli.habits import habits

        words, first = habits(argv, parser, ENTRIES)
        args = parser.parse_args(words)
        args.first_message = first
        if first is not None and args.command is not None:
            commands = ", ".join(c for c in ENTRIES if c)
            raise UsageError(f"{first!r} is not a command (commands: {commands})")
        if args.continue_last and args.resume:
            raise UsageError("-c/--continue and -r/--resume cannot be combined; choose one")
        return _run(args, parser)
    except UsageError as exc:
        from reasonix.terminal_text import terminal_safe

        # Configuration errors quote file contents: shown, never obeyed.
        print(f"reasonix: {terminal_safe(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except SystemExit as exc:  # argparse --help (0)
        return int(exc.code or 0) if isinstance(exc.code, int) else EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`reasonix sessions list | head -1`): not a failure of ours.
        # Point stdout at /dev/null so the interpreter's last flush does not raise again.
        import os

        with contextlib.suppress(OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK


def _run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    import importlib

    entry = ENTRIES.get(args.command)
    if entry is None:
        parser.print_help()
        return EXIT_USAGE
    module, _, function = entry.partition(":")
    run: Callable[[argparse.Namespace], int] = getattr(importlib.import_module(module), function)
    return run(args)
