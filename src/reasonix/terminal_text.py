"""The one sanitiser for text that reaches a terminal.

Everything reasonix prints that came from outside (a model, a tool, an MCP server, a file, a
configuration value, a provider's error body) goes through :func:`terminal_safe` first. A
terminal acts on escape sequences: CSI (cursor moves, screen clears, concealed text), OSC
(window titles, hyperlinks, and OSC 52, which writes the user's clipboard), DCS, APC, PM and
SOS strings, and the 8-bit C1 forms of all of them (``0x9b`` is CSI, ``0x9d`` OSC, ``0x9c``
ST). Every one of those starts with ESC or a C1 control, so the rule is simple and
independent of how text is split into chunks: every C0 control except newline and tab, DEL,
every C1 control, and the zero-width and bidirectional-override characters that reorder or
hide what is shown, are written as visible escapes (``\\x1b``, ``\\u202e``). Nothing a
sequence would do can happen; the user still sees that something was there.

:func:`strip_escape_sequences` is for the other direction: tool output going to the model,
where colour codes are noise. It removes whole sequences of every class (and leaves any
stray control character for :func:`terminal_safe` to show when the text is printed).
"""

from __future__ import annotations

import json
import re
from typing import Any

# C0 controls, DEL, C1 controls, zero-width characters and bidirectional overrides/isolates.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")
_UNSAFE_KEEP_LAYOUT = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]"
)

# Whole escape sequences, 7-bit (ESC-introduced) and 8-bit (C1-introduced):
# - CSI: ESC [ or 0x9b, parameter bytes, intermediate bytes, one final byte;
# - OSC: ESC ] or 0x9d, ended by BEL, ST (ESC \ or 0x9c), or the end of the text;
# - DCS, SOS, PM, APC: ESC P/X/^/_ or 0x90/0x98/0x9e/0x9f, ended by ST or the end of the text;
# - other ESC sequences: intermediates then one final byte (charset selection, keypad modes);
# - a lone ESC at the end.
_SEQUENCE = re.compile(
    "(?:\x1b\\[|\x9b)[0-?]*[ -/]*[@-~]?"
    "|(?:\x1b\\]|\x9d)[^\x07\x1b\x9c]*(?:\x07|\x1b\\\\|\x9c)?"
    "|(?:\x1b[PX^_]|[\x90\x98\x9e\x9f])[^\x1b\x9c]*(?:\x1b\\\\|\x9c)?"
    "|\x1b[ -/]*[0-~]"
    "|\x1b$"
)


def _escape_char(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str, *, keep_layout: bool = False) -> str:
    """``text`` with every control, zero-width and bidi character written as a visible escape
    (``\\x1b``). ``keep_layout`` leaves newlines and tabs alone; without it the result is one
    line (what an approval question or a one-line summary needs)."""
    pattern = _UNSAFE_KEEP_LAYOUT if keep_layout else _UNSAFE
    return pattern.sub(_escape_char, text)


def terminal_safe(text: str) -> str:
    """``text`` safe to write to a terminal, keeping its lines: ``\\r\\n`` becomes ``\\n``, and
    every other control character (ESC, C1, a lone ``\\r``, backspace, BEL) is shown escaped,
    so no escape sequence of any class can act."""
    return printable(text.replace("\r\n", "\n"), keep_layout=True)


def one_line(text: str) -> str:
    """``text`` safe for a terminal and on one line (newlines and tabs shown escaped too)."""
    return printable(text)


def strip_escape_sequences(text: str) -> str:
    """``text`` without terminal escape sequences of any class (CSI, OSC ended by BEL or ST,
    DCS, SOS, PM, APC, their 8-bit forms, other ESC sequences). For output going to the model;
    what is printed still goes through :func:`terminal_safe`."""
    if "\x1b" not in text and not any("\x90" <= ch <= "\x9f" for ch in text):
        return text
    return _SEQUENCE.sub("", text)


_JSON_UNSAFE = re.compile("[\x7f-\x9f\u2028\u2029\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


def json_text_for_terminal(text: str) -> str:
    """Serialised JSON with the characters JSON leaves raw but a terminal acts on (DEL, C1
    controls, bidi overrides, line separators) written as ``\\uXXXX`` escapes: the same JSON
    value, nothing a terminal would obey. (JSON already escapes C0 controls.)"""
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def json_for_terminal(value: Any, **kwargs: Any) -> str:
    """``json.dumps(value, ensure_ascii=False, **kwargs)`` made safe with
    :func:`json_text_for_terminal`."""
    return json_text_for_terminal(json.dumps(value, ensure_ascii=False, **kwargs))


__all__ = [
    "json_for_terminal",
    "json_text_for_terminal",
    "one_line",
    "printable",
    "strip_escape_sequences",
    "terminal_safe",
]
