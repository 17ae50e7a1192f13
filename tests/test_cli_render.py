"""Incremental markdown in the terminal renderer: each completed line is redrawn once, as
markdown, rewriting only its own rows; pipes get the raw text."""

from __future__ import annotations

import io
import re

from rich.console import Console

from reasonix.cli.render import MarkdownLines, TerminalRenderer
from reasonix.events import TextDeltaEvent

ANSWER = (
    "# Result\nThe fix is **small** and uses `pathlib`.\n\n- first point\n- second point\n"
    "```python\ndef f():\n    return 1\n```\nAll done."
)
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def stream(console: Console, text: str, size: int = 3) -> str:
    renderer = TerminalRenderer(console, show_role_headers=False)
    for i in range(0, len(text), size):
        renderer.emit(TextDeltaEvent("executor", text[i : i + size]))
    renderer.finish()
    out = console.file.getvalue()  # type: ignore[attr-defined]
    assert isinstance(out, str)
    return out


def terminal(width: int = 80) -> Console:
    return Console(file=io.StringIO(), force_terminal=True, width=width, color_system="standard")


def test_terminal_output_is_rendered_markdown_line_by_line() -> None:
    out = stream(terminal(), ANSWER)
    assert "\x1b[2J" not in out  # never a whole-screen clear
    assert "\x1b[1msmall\x1b[0m" in out
    assert " • \x1b[0mfirst point" in out
    plain = ANSI.sub("", out)
    # every completed line appears rendered: markers gone, text kept
    assert "**small**" not in plain.split("\r")[-1]
    assert "• second point" in plain
    assert "def f():" in plain.replace("\x1b[49m", "")
    assert plain.rstrip().endswith("All done.")
    # only the line being finished is erased: one erase per line that was shown raw
    shown_raw = [line for line in ANSWER.split("\n") if line]
    assert out.count("\x1b[J") == len(shown_raw)


def test_pipes_get_the_raw_text_unchanged() -> None:
    console = Console(file=io.StringIO(), force_terminal=False, width=80)
    out = stream(console, ANSWER)
    assert out.rstrip("\n") == ANSWER


def test_a_wrapped_line_is_erased_over_all_its_rows() -> None:
    console = terminal(width=20)
    md = MarkdownLines(console)
    md.feed("x" * 45)  # three rows at width 20
    md.feed(" end\n")
    out = console.file.getvalue()  # type: ignore[attr-defined]
    assert "\r\x1b[2A\x1b[J" in out


def test_wide_characters_count_as_two_cells() -> None:
    console = terminal(width=10)
    md = MarkdownLines(console)
    md.feed("漢字漢字漢字")  # 12 cells: two rows
    md.feed("\n")
    out = console.file.getvalue()  # type: ignore[attr-defined]
    assert "\r\x1b[1A\x1b[J" in out


def test_escape_sequences_from_the_model_or_tools_are_shown_not_obeyed() -> None:
    from reasonix.events import ToolCallEvent, ToolResultEvent
    from reasonix.messages import ToolCall

    console = terminal()
    renderer = TerminalRenderer(console, show_role_headers=False)
    renderer.emit(TextDeltaEvent("executor", "look \x1b]0;pwned\x07 here\n"))
    renderer.emit(ToolCallEvent("executor", ToolCall("c1", "bash", '{"command": "x\\u001b[2J"}')))
    renderer.emit(ToolResultEvent("executor", "c1", "bash", "out\x1b[8mhidden\n[exit code 1]"))
    renderer.finish()
    out = console.file.getvalue()  # type: ignore[attr-defined]
    assert "\x1b]0;" not in out  # no title change
    assert "\x1b[2J" not in out  # no screen clear
    assert "\x1b[8m" not in out  # no concealed text
    assert "\\x1b]0;pwned" in ANSI.sub("", out)


def test_a_call_is_shown_by_the_subject_its_tool_declares() -> None:
    """The terminal shows ``name(subject)`` from the event (what the tool declares the call
    acts on), escaped like everything else; with no subject, its first two arguments."""
    from reasonix.cli.render import summarize_call
    from reasonix.events import ToolCallEvent
    from reasonix.messages import ToolCall

    call = ToolCall("c1", "patch_text", '{"target": "notes.md", "old_string": "a"}')
    assert summarize_call(ToolCallEvent("executor", call, "edit", "notes.md")) == (
        "patch_text(notes.md)"
    )
    hostile = ToolCallEvent("executor", call, "edit", "x\x1b[2Jy")
    assert "\x1b" not in summarize_call(hostile)
    assert summarize_call(ToolCallEvent("executor", call)) == (
        "patch_text(target='notes.md', old_string='a')"
    )
