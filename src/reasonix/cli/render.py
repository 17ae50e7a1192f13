"""Terminal rendering of events with Rich, incrementally.

Text deltas are written as they arrive (never a redraw of the screen per token). On a terminal,
each line is re-drawn once, as markdown, when it is complete: only that line's rows are
rewritten, so long answers never flicker (see :class:`MarkdownLines`). Reasoning is
shown as one dimmed status line updated in place while it streams, then collapsed to a short
summary (``/reasoning`` prints the whole of the last one). Tool calls are one line each with a
short result line; diffs in tool results are coloured; plans are rendered as markdown once.

It runs past 500 lines because every event kind is drawn here against one piece of terminal
state (the line being streamed, the collapsed reasoning, the status line it pauses): split by
event kind, each part would need that state passed around, and a kind drawn apart from the
others is where a half-drawn line or an unsanitised string slips through.
"""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING, Any

from rich.cells import cell_len
from rich.console import Console
from rich.text import Text

from reasonix.terminal_text import printable, terminal_safe
from reasonix.tools.limits import ArgumentsRejected, parse_arguments

if TYPE_CHECKING:
    # The event types load with the session, after the interactive prompt (which builds the
    # renderer) is drawn: the handlers below are typed by them, and chosen by kind.
    from reasonix.events import (
        CacheMissExplained,
        ErrorEvent,
        Event,
        GateDecided,
        NoticeEvent,
        PlanApproval,
        PlanFailed,
        PlanProduced,
        ReplanTriggered,
        RetryEvent,
        ReviewVerdict,
        StepCompleted,
        ToolCallEvent,
        ToolResultEvent,
        TurnEnded,
        TurnStarted,
    )

_DIFF_LINES = 40
_ERROR_LINES = 6


def summarize_call(event: ToolCallEvent, width: int = 80) -> str:
    """``name(subject)`` on one line: what the tool declares the call acts on (the event's
    ``subject``), else its first two arguments."""
    name = event.call.name
    shown = event.subject
    if not shown:
        try:
            args = parse_arguments(name, event.call.arguments)
        except ArgumentsRejected:
            args = {}
        if isinstance(args, dict):
            shown = ", ".join(f"{k}={v!r}" for k, v in list(args.items())[:2])
    shown = printable(" ".join(shown.split()))
    if len(shown) > width:
        shown = shown[: width - 1] + "…"
    return f"{name}({shown})"


def _diff_body(lines: list[str]) -> list[str]:
    """A diff's lines from its first header on, without trailing blanks (a tool's result may
    have been stripped where its preview was not)."""
    start = next((i for i, line in enumerate(lines) if line.startswith(("---", "@@"))), 0)
    body = [line.rstrip() for line in lines[start:]]
    while body and not body[-1]:
        body.pop()
    return body


def _is_diff(lines: list[str]) -> bool:
    return any(line.startswith("@@") for line in lines) and any(
        line.startswith(("+", "-")) for line in lines
    )


def markdown(text: str) -> Any:
    """A Rich ``Markdown`` of ``text`` with every heading left-aligned (Rich centres H1s,
    which puts a title 60 columns into a wide terminal). Rich's markdown loads on first use."""
    return _markdown_class()(text)


_MARKDOWN_CLASS: Any = None


def _markdown_class() -> Any:
    global _MARKDOWN_CLASS
    if _MARKDOWN_CLASS is None:
        from typing import ClassVar

        from rich.markdown import Heading, Markdown

        class LeftHeading(Heading):
            LEVEL_ALIGN: ClassVar[dict[str, Any]] = {f"h{n}": "left" for n in range(1, 7)}

        class LeftMarkdown(Markdown):
            elements: ClassVar[dict[str, Any]] = {**Markdown.elements, "heading_open": LeftHeading}

        _MARKDOWN_CLASS = LeftMarkdown
    return _MARKDOWN_CLASS


def _trim_blank_rows(rendered: str) -> str:
    """Rendered markdown without the blank rows Rich pads blocks with."""
    rows = rendered.split("\n")
    while rows and not _visible(rows[0]):
        rows.pop(0)
    while rows and not _visible(rows[-1]):
        rows.pop()
    return "\n".join(rows)


_SGR = re.compile(r"\x1b\[[0-9;]*m")


def _visible(row: str) -> bool:
    """Whether a rendered row shows anything (colour codes and spaces do not count)."""
    return bool(_SGR.sub("", row).strip())


def _is_table_row(line: str) -> bool:
    stripped = line.strip()
    return stripped.startswith("|") and stripped.count("|") >= 2


class MarkdownLines:
    """Incremental markdown for a streamed answer, one completed line at a time.

    The partial line is shown raw as it streams; when its newline arrives, the raw rows are
    erased and the line is printed rendered (headings, lists, emphasis, inline code; fenced code
    blocks are tracked across lines and shown highlighted as code). Only the current line is
    ever rewritten. A table is held while its rows arrive (each row shows raw only while it
    streams) and drawn as a table once its last row is complete.
    """

    def __init__(self, console: Console) -> None:
        self.console = console
        self.partial = ""
        self.fence: str | None = None  # the language of the open ``` block, "" if none given
        self.table: list[str] = []

    def feed(self, text: str) -> None:
        *complete, rest = (self.partial + text).split("\n")
        shown = self.partial
        for line in complete:
            self._erase(shown)
            self._line(line)
            shown = ""
        self.partial = rest
        tail = rest[len(shown) :] if rest.startswith(shown) else rest
        if tail:
            self.console.file.write(tail)
            self.console.file.flush()

    def flush(self) -> None:
        """Render what is left of the last line (the answer ended without a newline)."""
        if self.partial:
            self._erase(self.partial)
            self._line(self.partial)
            self.partial = ""
        self._end_table()
        self.fence = None

    def _line(self, line: str) -> None:
        if self.fence is None and _is_table_row(line):
            self.table.append(line)
            return
        self._end_table()
        self._render(line)

    def _end_table(self) -> None:
        if not self.table:
            return
        rows, self.table = self.table, []
        if len(rows) < 2 or "-" not in rows[1]:
            for row in rows:  # not a table after all: the rows as they were written
                self._render(row)
            return
        with self.console.capture() as captured:
            self.console.print(markdown("\n".join(rows)))
        self.console.file.write(_trim_blank_rows(captured.get()) + "\n")
        self.console.file.flush()

    def _erase(self, raw: str) -> None:
        if not raw:
            return
        rows = max(1, -(-cell_len(raw) // max(self.console.width, 1)))
        up = f"\x1b[{rows - 1}A" if rows > 1 else ""
        self.console.file.write("\r" + up + "\x1b[J")

    def _render(self, line: str) -> None:
        stripped = line.strip()
        if stripped.startswith("```"):
            self.fence = None if self.fence is not None else stripped[3:].strip()
            self.console.print(line, style="dim", markup=False, highlight=False)
        elif self.fence is not None:
            from rich.syntax import Syntax

            code = Syntax(line, self.fence or "text", theme="ansi_dark", background_color="default")
            self.console.print(code)
        elif not stripped:
            self.console.print()
        else:
            # Rich sets lists and headings apart with blank lines; one line of an answer
            # should stay one line, so render aside and drop the padding.
            with self.console.capture() as captured:
                self.console.print(markdown(line))
            self.console.file.write(_trim_blank_rows(captured.get()) + "\n")
        self.console.file.flush()


class TerminalRenderer:
    """A :class:`~reasonix.events.Sink` that draws events on a Rich console."""

    def __init__(self, console: Console | None = None, *, show_role_headers: bool = True) -> None:
        self.console = console or Console(highlight=False)
        self.show_role_headers = show_role_headers
        self.reasoning_blocks: list[tuple[str, str]] = []  # (role, text)
        self._reasoning: list[str] = []
        self._reasoning_role = ""
        self._reasoning_started = 0.0
        self._at_line_start = True
        self._role = ""
        self._models: dict[str, str] = {}
        #: every tool result shown, numbered from 1: (call summary, content, is_error)
        self.results: list[tuple[str, str, bool]] = []
        #: compaction outcomes shown so far (a command that compacts need not repeat one)
        self.compactions = 0
        self._calls: dict[str, str] = {}
        #: the diff an approval just showed, so the edit's result does not show it again
        self._previewed: list[str] = []
        # Markdown needs cursor control: only on a terminal; pipes and logs get the raw text.
        self._md = MarkdownLines(self.console) if self.console.is_terminal else None

    def set_models(self, models: dict[str, str]) -> None:
        self._models = dict(models)

    # -- low-level output --------------------------------------------------------------------------

    def _write(self, text: str) -> None:
        """Raw text, streamed as it comes (no markup, no re-rendering)."""
        if not text:
            return
        self.console.file.write(text)
        self.console.file.flush()
        self._at_line_start = text.endswith("\n")

    def _newline(self) -> None:
        if self._md is not None:
            had_partial = bool(self._md.partial)
            self._md.flush()
            if had_partial:
                self._at_line_start = True
        if not self._at_line_start:
            self._write("\n")

    def line(self, text: str | Text, style: str = "") -> None:
        """A whole line (after finishing any partial one). Plain strings are made printable:
        notices and errors quote servers and tools."""
        if isinstance(text, str):
            text = printable(text, keep_layout=True)
        self._end_reasoning()
        self._newline()
        self.console.print(text, style=style, markup=False, highlight=False, overflow="fold")
        self._at_line_start = True

    # -- reasoning ---------------------------------------------------------------------------------

    def _reasoning_delta(self, role: str, text: str) -> None:
        if not self._reasoning:
            self._newline()
            self._reasoning_role = role
            self._reasoning_started = time.monotonic()
        self._reasoning.append(printable(text, keep_layout=True))
        if self.console.is_terminal:
            total = "".join(self._reasoning)
            tail = " ".join(total[-200:].split())
            width = max(self.console.width - 24, 20)
            status = f"thinking ({len(total)} chars) {tail[-width:]}"
            # One line rewritten in place: cheap and flicker-free.
            self.console.file.write("\r\x1b[2K" + f"\x1b[2m{status}\x1b[0m")
            self.console.file.flush()

    def _end_reasoning(self) -> None:
        if not self._reasoning:
            return
        text = "".join(self._reasoning)
        self._reasoning = []
        self.reasoning_blocks.append((self._reasoning_role, text))
        if self.console.is_terminal:
            self.console.file.write("\r\x1b[2K")
        seconds = time.monotonic() - self._reasoning_started
        first = " ".join(text.split())
        width = max(self.console.width - 40, 20)
        if len(first) > width:
            first = first[: width - 1] + "…"
        summary = f"▸ thought {seconds:.1f}s: {first}  (/reasoning to expand)"
        self.console.print(summary, style="dim", markup=False, highlight=False)
        self._at_line_start = True

    def last_reasoning(self) -> str:
        """The most recent reasoning block in full (for ``/reasoning``)."""
        if not self.reasoning_blocks:
            return "No reasoning has been shown yet."
        role, text = self.reasoning_blocks[-1]
        return f"[{role} reasoning]\n{text}"

    # -- events ------------------------------------------------------------------------------------

    def emit(self, event: Event) -> None:
        from reasonix.events import ReasoningDeltaEvent, TextDeltaEvent

        if isinstance(event, ReasoningDeltaEvent):
            self._reasoning_delta(event.role, event.text)
            return
        if isinstance(event, TextDeltaEvent):
            self._end_reasoning()
            self._role_header(event.role)
            # Model text is shown, never obeyed: escape sequences in it are made visible.
            text = printable(event.text, keep_layout=True)
            if self._md is not None:
                self._md.feed(text)
                self._at_line_start = not self._md.partial
            else:
                self._write(text)
            return
        handler = getattr(self, f"_on_{event.kind}", None)
        if handler is not None:
            self._end_reasoning()
            handler(event)

    def _role_header(self, role: str) -> None:
        if role == self._role or role == "controller":
            return
        self._role = role
        if self.show_role_headers:
            model = self._models.get(role, "")
            label = printable(f"── {role}" + (f" · {model}" if model else "") + " ")
            self.line(Text(label, style="bold cyan" if role == "planner" else "bold green"))

    def _on_turn_started(self, event: TurnStarted) -> None:
        self._role_header(event.role)

    def _on_gate_decided(self, event: GateDecided) -> None:
        if event.route != "executor_only":
            self.line(f"planner gate: {event.route} ({event.reason})", "dim")

    def _on_tool_call(self, event: ToolCallEvent) -> None:
        self._role_header(event.role)
        text = Text("● ", style="yellow")
        summary = summarize_call(event)
        self._calls[event.call.id] = summary
        text.append(summary, style="bold")
        self.line(text)

    def _on_tool_result(self, event: ToolResultEvent) -> None:
        call = self._calls.pop(event.call_id, event.name)
        self.results.append((call, event.content, event.is_error))
        number = len(self.results)
        lines = printable(event.content, keep_layout=True).splitlines() or [""]
        tag = f"  [#{number}, ctrl-o or /expand {number}]" if len(lines) > 1 else ""
        if event.is_error:
            # An error is shown whole (wrapped at words), up to a few lines.
            shown = [line for line in lines if line.strip()][:_ERROR_LINES] or [""]
            more = len(lines) - len(shown)
            error = Text("  ⎿ " + "\n    ".join(shown), style="red")
            if more > 0:
                error.append(f"\n    … {more} more lines{tag}", style="dim")
            self.line(error)
            return
        previewed, self._previewed = self._previewed, []
        if _is_diff(lines):
            at = next(i for i, line in enumerate(lines) if line.startswith(("---", "@@")))
            if previewed and _diff_body(lines[at:]) == _diff_body(previewed):
                # The person approved this very diff a moment ago: say it was applied.
                head = " ".join(line.strip() for line in lines[:at]) or "applied"
                self.line(Text(f"  ⎿ {head} (the diff shown above){tag}", style="dim"))
                return
            self._diff(lines)
            return
        text = [line.strip() for line in lines if line.strip()] or ["(no output)"]
        # A command's outcome is its last line (its output's, or "[exit code N]" when it
        # failed); anything else leads with it.
        head = text[-1] if event.name == "bash" else text[0]
        width = max(self.console.width - 40, 30)
        if len(head) > width:
            head = head[: width - 1] + "…"
        extra = f" ({len(lines)} lines){tag}" if len(lines) > 1 else ""
        self.line(Text(f"  ⎿ {head}{extra}", style="dim"))

    def expand(self, number: int | None = None) -> None:
        """Print tool result ``number`` (1-based, as shown after ``⎿``; default: the last)
        in full."""
        if not self.results:
            self.line("No tool results yet.", "dim")
            return
        index = len(self.results) if number is None else number
        if not 1 <= index <= len(self.results):
            self.line(f"There is no tool result #{index} (1 to {len(self.results)}).", "yellow")
            return
        call, content, is_error = self.results[index - 1]
        header = Text(f"── #{index} {call}" + (" (error)" if is_error else ""), style="bold")
        self.line(header)
        body = printable(content, keep_layout=True).rstrip("\n") or "(no output)"
        self.line(Text(body, style="red" if is_error else ""))

    def preview(self, text: str) -> None:
        """What a call will do, before it is approved: a diff coloured, other text dimmed."""
        lines = printable(text, keep_layout=True).splitlines()
        if _is_diff(lines):
            self._previewed = lines
            self._diff(lines, limit=80)
            return
        body = Text()
        for raw in lines:
            body.append("    " + raw + "\n", style="dim")
        body.rstrip()
        self.line(body)

    def _diff(self, lines: list[str], limit: int = _DIFF_LINES) -> None:
        shown = lines[:limit]
        out = Text()
        for raw in shown:
            style = ""
            if raw.startswith("+") and not raw.startswith("+++"):
                style = "green"
            elif raw.startswith("-") and not raw.startswith("---"):
                style = "red"
            elif raw.startswith("@@"):
                style = "cyan"
            out.append("    " + raw + "\n", style=style or "dim")
        if len(lines) > limit:
            out.append(f"    … {len(lines) - limit} more lines\n", style="dim")
        out.rstrip()
        self.line(out)

    def _on_plan_produced(self, event: PlanProduced) -> None:
        # Loaded on first plan: markdown parsing costs ~50 ms of start-up otherwise.
        from rich.panel import Panel

        title = "plan" if event.round == 1 else f"revised plan (round {event.round})"
        self._newline()
        # Plan markdown puts its bold headings on single lines; give them paragraphs.
        # The plan is the model's text: shown, never obeyed.
        text = terminal_safe(event.markdown).replace("\n**", "\n\n**")
        self.console.print(Panel(markdown(text), title=title, border_style="cyan"))
        self._at_line_start = True

    def _on_plan_failed(self, event: PlanFailed) -> None:
        self.line(f"planning failed: {event.reason}", "yellow")

    def _on_plan_approval(self, event: PlanApproval) -> None:
        self.line(f"plan {'approved' if event.approved else 'not approved'}: {event.reason}", "dim")

    def _on_replan_triggered(self, event: ReplanTriggered) -> None:
        self.line(f"re-planning (round {event.round}): {event.reason}", "yellow")

    def _on_step_completed(self, event: StepCompleted) -> None:
        if event.accepted:
            self.line(Text(f"✓ step {printable(str(event.step))} completed", style="green"))
        else:
            reason = printable(event.reason[:160])
            self.line(Text(f"✗ step {printable(str(event.step))} not accepted: {reason}", "yellow"))

    def _on_notice(self, event: NoticeEvent) -> None:
        if event.code == "mcp_starting":  # progress, not a problem
            self.line(event.message, "dim")
            return
        self.line(f"note: {event.message}", "yellow")

    def _on_review_verdict(self, event: ReviewVerdict) -> None:
        style = {"allow": "green", "deny": "red"}.get(event.decision, "yellow")
        self.line(printable(event.line()), style)

    def _on_error(self, event: ErrorEvent) -> None:
        self.line(f"error ({event.error_type}): {event.message}", "bold red")

    def _on_retry(self, event: RetryEvent) -> None:
        self.line(
            f"retrying (attempt {event.attempt}) in {event.delay:.1f}s: {event.reason}", "dim"
        )

    def _on_output_retracted(self, event: Any) -> None:
        # A terminal cannot take back what it printed: say that it no longer counts.
        chars = getattr(event, "partial_chars", 0)
        self.line(f"↺ the answer broke off: the {chars} characters above are withdrawn", "yellow")

    def _on_cache_miss_explained(self, event: CacheMissExplained) -> None:
        what = ", ".join(event.changed)
        self.line(f"cache miss ({event.role}): {what}. {event.detail}".strip(), "dim")

    def _on_compaction(self, event: Any) -> None:
        self.compactions += 1
        accepted = getattr(event, "accepted", False)
        before, after = getattr(event, "messages_before", 0), getattr(event, "messages_after", 0)
        reason = getattr(event, "reason", "")
        if accepted:
            self.line(f"compacted {event.role} history: {before} -> {after} messages", "yellow")
        else:
            self.line(f"compaction skipped: {reason}", "dim")

    def _on_turn_ended(self, event: TurnEnded) -> None:
        self._newline()
        if event.reason == "cancelled":
            self.line("interrupted", "yellow")

    def end_line(self) -> None:
        """End any partial line (before a question is asked mid-turn)."""
        self._end_reasoning()
        self._newline()

    def finish(self) -> None:
        """End any partial line (after a turn, before the prompt comes back)."""
        self._end_reasoning()
        self._newline()
        self._role = ""
