"""``reasonix run``: one task without a terminal UI.

Output formats:

- ``text``: the final answer on stdout; errors and refusals on stderr.
- ``json``: one result object on stdout (see :func:`result_object`).
- ``stream-json``: an ``init`` line first (session id, models per role, the executor's tools,
  the permission mode, the working folder), then every event as one JSON line
  (``event.to_dict()``), then the result object. Every line carries ``ts``: when it was
  written, ISO 8601 in UTC with milliseconds (``2026-12-01T23:30:00.123Z``).

``--input-format stream-json`` (with ``--output-format stream-json``) reads user messages from
stdin, one JSON object per line (``{"type": "user", "message": {"content": "..."}}`` or
``{"text": "..."}``), and runs them as consecutive turns of one session: each turn's events
and result are written as the turn ends; the exit code is the last failing turn's (0 if none
failed).

Background jobs (``bash`` with ``run_in_background``) still running when the run ends are
listed in the result's ``jobs`` (text mode: on stderr) and stopped, unless kept
(``[jobs] keep_on_exit``).

Exit codes: 0 success; 1 failure (model/provider error such as 402, stalled, step limit);
2 usage/config error; 3 refused work (a permission denial stopped part of the task, or a plan
was declined); 4 needs input: the model asked the user (``ask``), the run stopped with the stop
reason ``needs_input`` and the questions in the result (``questions``; text mode prints them),
and ``reasonix run -c "<answer>"`` continues the session with the answer as the call's result;
5 plan incomplete: the executor stopped with plan steps open (the result names them).
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reasonix.app.assembly import make_confinement
from reasonix.app.goal import goal_budget, goal_max_turns
from reasonix.app.headless import (
    EXIT_OK,
    MAX_PIPED_INPUT,
    PipedInput,
    YesApprover,
    append_instructions,
    approve_all_plans,
    exit_code,
    piped_input,
    reply_object,
    result_object,
    run_text,
)
from reasonix.app.jobs import ending_notes
from reasonix.app.session import AgentSession
from reasonix.app.turn import TurnOutcome
from reasonix.cli.commands import UsageError, start
from reasonix.cli.stream_json import StreamJsonSink, init_object, input_message
from reasonix.errors import ReasonixError, SessionError
from reasonix.events import (
    ErrorEvent,
    Event,
    NoticeEvent,
    NullSink,
    OutputRetracted,
    Sink,
    TextDeltaEvent,
    ToolCallEvent,
)
from reasonix.redaction import redact, redact_json_text
from reasonix.terminal_text import json_text_for_terminal, terminal_safe
from reasonix.tools.ask import describe_questions

if TYPE_CHECKING:
    from reasonix.messages import ImagePart


class SafeJsonStream:
    """The stream ``--output-format json|stream-json`` writes to: known secrets redacted, and
    the characters JSON leaves raw but a terminal obeys (C1 controls) escaped."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        return int(self._stream.write(json_text_for_terminal(redact_json_text(text))))

    def flush(self) -> None:
        self._stream.flush()


def shown(text: str) -> str:
    """Text for the terminal: known secrets redacted, escape sequences made harmless."""
    return terminal_safe(redact(text))


class StderrNotices:
    """Text mode's sink: notices (a missing MCP SDK, a capped step) and MCP server failures go
    to stderr as they happen; everything else is the answer, printed at the end.
    ``partial_text`` is the executor's text since its last tool call, for an answer that ends
    without a final text of its own (stopped by the content filter)."""

    def __init__(self) -> None:
        self._text: list[str] = []

    @property
    def partial_text(self) -> str:
        return "".join(self._text)

    def emit(self, event: Event) -> None:
        if event.role == "executor":
            if isinstance(event, TextDeltaEvent):
                self._text.append(event.text)
            elif isinstance(event, ToolCallEvent | OutputRetracted):
                self._text.clear()
        if isinstance(event, NoticeEvent):
            from reasonix.app.outcomes import CLOSING_NOTICES

            if event.code in CLOSING_NOTICES:
                return  # why the turn ended: the result printed at the end says it, once
            print(f"reasonix: note: {shown(event.message)}", file=sys.stderr, flush=True)
        elif isinstance(event, ErrorEvent) and event.role == "mcp":
            print(f"reasonix: {shown(event.message)}", file=sys.stderr, flush=True)


def questions_text(questions: list[dict[str, Any]]) -> str:
    """Text mode's form of the questions a run stopped on, and how to answer them."""
    lines = ["The model asks:", *describe_questions(questions)]
    lines.append('Answer with: reasonix run -c "<your answer>"')
    return "\n".join(lines)


async def _run_goal(session: AgentSession, goal: GoalRequest) -> TurnOutcome:
    try:
        if goal.objective is None:
            turn = session.goals.resume(budget_usd=goal.budget_usd, max_turns=goal.max_turns)
        else:
            turn = session.goals.start(
                goal.objective, budget_usd=goal.budget_usd, max_turns=goal.max_turns
            )
    except ReasonixError as exc:
        raise UsageError(str(exc)) from None
    return await turn.result()


def read_images(paths: list[str], *, stdin_task: bool) -> tuple[ImagePart, ...]:
    """The ``--image`` files (``-``: the bytes on standard input), each checked from its bytes
    before anything is sent; a file that is no image, too large or unreadable is a usage
    error that says which and why."""
    if not paths:
        return ()
    from reasonix.images import ImageError, load_image

    if paths.count("-") > 1 or ("-" in paths and stdin_task):
        raise UsageError("standard input can carry one thing: the task or one --image -")
    found = []
    for path in paths:
        try:
            if path == "-":
                data = bytes(sys.stdin.buffer.read())
                name = "stdin"
            else:
                data = Path(path).read_bytes()
                name = Path(path).name
            found.append(load_image(data, name=name, what=f"--image {path}"))
        except OSError as exc:
            raise UsageError(f"--image {path}: {exc.strerror or exc}") from None
        except ImageError as exc:
            raise UsageError(f"{exc}; nothing was sent") from None
    return tuple(found)


def _stdin_is_piped() -> bool:
    """Whether standard input is a pipe or a file (not a terminal, not /dev/null)."""
    import os
    import stat

    try:
        mode = os.fstat(sys.stdin.fileno()).st_mode
    except (OSError, ValueError, AttributeError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISREG(mode)


def _read_piped() -> PipedInput | None:
    """The piped input: its first bytes kept, the rest only counted."""
    buffer = getattr(sys.stdin, "buffer", None)
    if buffer is None:
        return piped_input(sys.stdin.read().encode())
    kept = bytes(buffer.read(MAX_PIPED_INPUT))
    size = len(kept)
    while chunk := buffer.read(1 << 16):
        size += len(chunk)
    return piped_input(kept, sys.stdin.encoding or "utf-8", size=size)


def read_task(task: str) -> str:
    """The task from the argument or, for ``-``, from stdin. Bytes that are not valid in the
    input's encoding become U+FFFD: a lone surrogate (what Python makes of them) cannot be
    stored or sent."""
    text: str
    if task == "-":
        buffer = getattr(sys.stdin, "buffer", None)
        if buffer is not None:
            text = bytes(buffer.read()).decode(sys.stdin.encoding or "utf-8", "surrogateescape")
        else:
            text = sys.stdin.read()
    else:
        text = task
    text = text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    if not text.strip():
        raise UsageError("the task is empty")
    return text


def _prepare_stdout(fmt: str) -> None:
    """JSON output is UTF-8 whatever the locale says (RFC 8259), with anything unencodable
    escaped; the text answer never crashes on a character the terminal's encoding lacks."""
    if not isinstance(sys.stdout, io.TextIOWrapper):
        return
    if fmt == "text":
        sys.stdout.reconfigure(errors="replace")
    else:
        sys.stdout.reconfigure(encoding="utf-8", errors="backslashreplace")


def _goal_request(args: argparse.Namespace) -> GoalRequest | None:
    """``--goal`` / ``--goal-resume`` and their limits, checked (None for a plain task)."""
    goal, resume = getattr(args, "goal", None), getattr(args, "goal_resume", False)
    budget, turns = getattr(args, "goal_budget", None), getattr(args, "goal_max_turns", None)
    if goal is None and not resume:
        if budget is not None or turns is not None:
            raise UsageError("--goal-budget and --goal-max-turns go with --goal or --goal-resume")
        return None
    if goal is not None and resume:
        raise UsageError("--goal starts a goal and --goal-resume continues one: pass only one")
    if args.task is not None:
        raise UsageError("a goal run takes no task argument: the objective is --goal's value")
    if resume and not (args.continue_last or args.resume):
        raise UsageError("--goal-resume continues a stored session's goal: add -c or -r ID")
    try:
        return GoalRequest(
            objective=goal.strip() if goal is not None else None,
            budget_usd=goal_budget(budget) if budget is not None else None,
            max_turns=goal_max_turns(turns) if turns is not None else None,
        )
    except ReasonixError as exc:
        raise UsageError(str(exc)) from None


@dataclass(frozen=True)
class GoalRequest:
    """What ``--goal`` (an objective) or ``--goal-resume`` (None) asked for."""

    objective: str | None
    budget_usd: float | None
    max_turns: int | None


def run_headless(args: argparse.Namespace) -> int:
    goal = _goal_request(args)
    if goal is not None and goal.objective == "":
        raise UsageError("--goal needs an objective")
    image_args = getattr(args, "image", None) or []
    if getattr(args, "input_format", "text") == "stream-json":
        _check_input_stream(args, goal, image_args)
        _prepare_stdout(args.output_format)
        return _start_and_run(args, "", None, (), None)
    stdin_free = goal is None and "-" not in image_args
    if goal is None and args.task is None:
        if not (stdin_free and _stdin_is_piped()):
            raise UsageError("reasonix run needs a task (or --goal OBJECTIVE)")
        args.task = "-"  # `cat task.md | reasonix -p`: the piped text is the task
    images = read_images(image_args, stdin_task=args.task == "-")
    piped: PipedInput | None = None
    if stdin_free and args.task != "-" and _stdin_is_piped():
        piped = _read_piped()
    task = read_task(args.task) if goal is None else ""
    # the user's own words, apart from what rides after them (auto mode's reviewer reads only
    # these as the request; the piped text is data)
    args.request = task
    if piped is not None:
        task = piped.attach(task)
    if goal is None:
        task = append_instructions(task, getattr(args, "append_system_prompt", None))
    _prepare_stdout(args.output_format)
    return _start_and_run(args, task, goal, images, piped)


def _check_input_stream(
    args: argparse.Namespace, goal: GoalRequest | None, image_args: list[str]
) -> None:
    """``--input-format stream-json`` takes its tasks from stdin and answers in stream-json."""
    if args.output_format != "stream-json":
        raise UsageError("--input-format stream-json goes with --output-format stream-json")
    if args.task is not None or goal is not None:
        raise UsageError(
            "--input-format stream-json reads the tasks from stdin: pass no task or --goal"
        )
    if "-" in image_args:
        raise UsageError("--input-format stream-json reads stdin: --image - cannot read it too")


def _start_and_run(
    args: argparse.Namespace,
    task: str,
    goal: GoalRequest | None,
    images: tuple[ImagePart, ...],
    piped: PipedInput | None,
) -> int:
    started = start(args)
    try:
        return asyncio.run(
            _run(
                args,
                task,
                started.config,
                started.store,
                started.environ,
                started.notice,
                goal,
                images,
                piped,
            )
        )
    finally:
        started.close()


async def _run(
    args: argparse.Namespace,
    task: str,
    config: Any,
    store: Any,
    environ: dict[str, str],
    notice: str,
    goal: GoalRequest | None = None,
    images: tuple[ImagePart, ...] = (),
    piped: PipedInput | None = None,
) -> int:
    fmt = args.output_format
    if piped is not None and piped.truncated and fmt == "text":
        print(
            f"reasonix: note: piped input of {piped.size} bytes cut to its first "
            f"{len(piped.text.encode())}",
            file=sys.stderr,
        )
    out = SafeJsonStream(sys.stdout)
    sink: Sink = StderrNotices() if fmt == "text" else NullSink()
    if fmt == "stream-json":
        sink = StreamJsonSink(out)
    if notice and fmt == "stream-json":  # text mode printed it already
        sink.emit(NoticeEvent("config", "project_config_ignored", notice))
    bash = make_confinement(config, store.path.parent, environ)
    if bash.notice:
        print(f"reasonix: warning: {bash.notice}", file=sys.stderr)
    try:
        session = await AgentSession.open(
            config,
            Path.cwd(),
            store=store,
            approver=YesApprover() if args.yes else None,
            sink=sink,
            resume_id=args.resume,
            continue_last=args.continue_last,
            plan_approver=approve_all_plans if args.yes else None,
            environ=environ,
        )
    except ReasonixError as exc:
        raise UsageError(str(exc)) from None
    try:
        if isinstance(sink, StreamJsonSink):
            sink.begin(init_object(session))
        if fmt == "text":
            for problem in session.mcp.problems():
                print(f"reasonix: {problem}", file=sys.stderr)
        if getattr(args, "input_format", "text") == "stream-json":
            return await _input_turns(args, session, sink, out)
        return await _turn(args, session, task, sink, out, goal, images, piped)
    finally:
        await session.aclose()


def _write_line(sink: Sink, out: SafeJsonStream, obj: dict[str, Any]) -> None:
    """A result or reply line: with its ``ts`` under stream-json, as it is under json."""
    if isinstance(sink, StreamJsonSink):
        sink.write(obj)
    else:
        out.write(json.dumps(obj, ensure_ascii=False) + "\n")
        out.flush()


async def _input_turns(
    args: argparse.Namespace, session: AgentSession, sink: Sink, out: SafeJsonStream
) -> int:
    """``--input-format stream-json``: each user message on stdin one turn of this session."""
    code, number, turns = EXIT_OK, 0, 0
    while line := await asyncio.to_thread(sys.stdin.readline):
        number += 1
        text = input_message(line, number)
        if text is None:
            continue
        turns += 1
        ran = await _turn(args, session, text, sink, out)
        if ran != EXIT_OK:
            code = ran
    if turns == 0:
        raise UsageError("--input-format stream-json: stdin held no user message")
    return code


async def _turn(
    args: argparse.Namespace,
    session: AgentSession,
    task: str,
    sink: Sink,
    out: SafeJsonStream,
    goal: GoalRequest | None = None,
    images: tuple[ImagePart, ...] = (),
    piped: PipedInput | None = None,
) -> int:
    """One task (or goal) of the session, its answer or result written in ``args``' format."""
    fmt = args.output_format
    plan_only = getattr(args, "plan_only", False)
    ran: TurnOutcome | str
    if goal is not None:
        ran = await _run_goal(session, goal)
    else:
        # A slash command (``reasonix run "/plan …"``, a custom ``"/review src/app.py"``)
        # is read off the one command table, as in the terminal app.
        try:
            ran = await run_text(
                session,
                task,
                plan=True if args.plan or plan_only else None,
                plan_only=plan_only,
                images=images,
                request=getattr(args, "request", None),
            )
        except SessionError as exc:
            raise UsageError(str(exc)) from None
    if isinstance(ran, str):  # a command answered without a model turn
        if fmt == "text":
            print(shown(ran))
        else:
            _write_line(sink, out, reply_object(session, task.strip().split()[0][1:], ran))
        return EXIT_OK
    outcome = ran
    code = exit_code(outcome)
    if fmt == "text":
        if outcome.is_error:
            print(f"reasonix: {shown(outcome.result.text)}", file=sys.stderr)
        elif outcome.result.stop_reason == "needs_input":
            print(shown(questions_text(session.pending_questions())))
        elif outcome.result.stop_reason == "content_filter":
            # The filter's notice went to stderr as it came; show what was written before.
            partial = sink.partial_text if isinstance(sink, StderrNotices) else ""
            if partial.strip():
                print(shown(partial))
        else:
            print(shown(outcome.result.text))
            # A turn ended by refusals lists them in its result; otherwise say each once.
            shown_denials = outcome.denials if outcome.result.stop_reason != "refused" else ()
            for d in dict.fromkeys(shown_denials):
                refusal = f"refused {d.tool} ({d.subject}): {d.reason}"
                print(f"reasonix: {shown(refusal)}", file=sys.stderr)
        if outcome.closing:
            print(shown(outcome.closing))
        for note in ending_notes(session.jobs.running()):
            print(f"reasonix: {shown(note)}", file=sys.stderr)
    else:
        result = result_object(session, outcome)
        if piped is not None:
            result["piped_input"] = piped.to_dict()
        _write_line(sink, out, result)
    return code
