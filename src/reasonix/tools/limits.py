"""Bounds on what a model can ask for in one response.

A model's response is untrusted input: it may ask for ten thousand tool calls, nest its
arguments a hundred thousand levels deep (Python's ``json`` raises ``RecursionError``), write a
100 MB file, or read two thousand files at once, and whatever enters the session is resent on
every later request. :class:`ToolLimits` says how much is accepted; the functions here apply
it where a response enters the session, so the stored and sent bytes are bounded from the
first request on and stay the same afterwards (the cache-first rule: shape once, on entry).

- :func:`bound_response`: at most ``max_calls_per_response`` calls run; the first call past
  the cap stays in the message with a tool error naming the cap, the rest are dropped from it
  (ten thousand error results would themselves be a megabyte resent on every step). A call
  whose arguments are too large or too deeply nested keeps its id and name but its arguments
  are replaced by a short note, and it gets a tool error instead of running.
- :func:`parse_arguments`: the guarded JSON parse every consumer of arguments uses.
- :class:`StepBudget`: the tool results of one step share ``max_step_result_chars``.
- :func:`check_request_size`: a request over ``max_request_chars`` is not sent.
"""

from __future__ import annotations

import asyncio
import json
import re
import weakref
from collections.abc import Collection
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any

from reasonix.errors import ProviderError

if TYPE_CHECKING:
    # The interactive prompt imports this module (to summarise calls) before it is drawn: the
    # message types load with the session, after it.
    from reasonix.messages import AssistantMessage, Message, ToolCall


class RequestTooLargeError(ProviderError):
    """A request would exceed ``[limits] max_request_chars``; it was refused before it was
    sent (a provider-side failure for the turn: the session stays valid for the next one)."""


@dataclass(frozen=True, slots=True)
class ToolLimits:
    """Caps on one model response and what it causes (all configurable in ``[limits]``).

    ``max_calls_per_response``: tool calls run from one response; ``max_argument_bytes`` and
    ``max_argument_depth``: one call's JSON arguments; ``max_write_bytes``: the content one
    ``write_file``/``edit_file``/``multi_edit`` call may write; ``max_step_result_chars``: the
    tool results of one step together (each is also capped on its own); ``max_request_chars``:
    the messages of one request; ``max_concurrent_tools``: tool calls (and so the processes
    they start) running at the same time.
    """

    max_calls_per_response: int = 64
    max_argument_bytes: int = 1_000_000
    max_argument_depth: int = 64
    max_write_bytes: int = 512_000
    max_step_result_chars: int = 200_000
    max_request_chars: int = 8_000_000
    max_concurrent_tools: int = 8
    #: ``read_file`` on an image: its largest size, the images one step may add, the detail
    max_image_bytes: int = 8_000_000
    max_images_per_step: int = 4
    image_detail: str = "auto"

    @classmethod
    def from_config(cls, section: Any) -> ToolLimits:
        """From the ``[limits]`` section (:class:`reasonix.config.LimitsConfig`, same names)."""
        return cls(**{f.name: getattr(section, f.name) for f in fields(cls)})


DEFAULT_LIMITS = ToolLimits()


class ArgumentsRejected(ValueError):
    """Arguments that are not parsed: too large, too deep or not JSON (the message says which,
    in words for the model)."""


# Strings (skipped whole, escapes included) and the brackets that open or close a level.
_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def json_depth_exceeds(text: str, limit: int) -> bool:
    """Whether ``text`` nests arrays/objects more than ``limit`` deep (scanned, not parsed)."""
    depth = 0
    for match in _JSON_TOKEN.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > limit:
                return True
        elif token in "]}":
            depth -= 1
    return False


def parse_arguments(
    name: str, arguments: str, limits: ToolLimits = DEFAULT_LIMITS, *, edits: bool = False
) -> Any:
    """The JSON value of a call's arguments (``{}`` when empty), or :class:`ArgumentsRejected`
    when they are over the size or depth limit or not JSON. Never raises ``RecursionError``.
    ``edits``: the tool writes file content it is given (its kind is ``edit``), so an
    oversized call is told how to write in parts."""
    size = len(arguments.encode("utf-8", "surrogatepass"))
    if size > limits.max_argument_bytes:
        raise ArgumentsRejected(_too_large(name, size, limits, edits))
    if not arguments.strip():
        return {}
    if json_depth_exceeds(arguments, limits.max_argument_depth):
        raise ArgumentsRejected(
            f"Not run: the arguments for {name} nest more than {limits.max_argument_depth} "
            f"levels deep (limit [limits] max_argument_depth). Call {name} again with flat "
            "arguments that match its schema."
        )
    try:
        return json.loads(arguments)
    except json.JSONDecodeError as exc:
        raise ArgumentsRejected(
            f"The arguments for {name} are not valid JSON ({exc.msg} at character {exc.pos}). "
            f"Call {name} again with a single JSON object that matches its schema."
        ) from None
    except RecursionError:  # deeper than the interpreter allows, if the limit was set high
        raise ArgumentsRejected(
            f"Not run: the arguments for {name} nest too deeply to read. Call {name} again "
            "with flat arguments that match its schema."
        ) from None


def write_in_parts_hint() -> str:
    """What a model should do instead of one oversized write."""
    return (
        "Write the file in parts: create it with write_file holding the first part, then add "
        "each further part with edit_file (replace the file's last line with that line plus "
        "the next part)."
    )


def _too_large(name: str, size: int, limits: ToolLimits, edits: bool) -> str:
    text = (
        f"Not run: the arguments for {name} are {size:,} bytes, over the "
        f"{limits.max_argument_bytes:,}-byte limit ([limits] max_argument_bytes)."
    )
    if edits:
        return f"{text} {write_in_parts_hint()}"
    return f"{text} Send smaller arguments."


def _note(arguments: str) -> str:
    return json.dumps(
        {"omitted": f"{len(arguments):,} characters of arguments, over the limits; not kept"}
    )


def bound_response(
    message: AssistantMessage,
    limits: ToolLimits = DEFAULT_LIMITS,
    edit_tools: Collection[str] = (),
) -> tuple[AssistantMessage, dict[str, str]]:
    """``message`` as it may enter the session, and the refusals (call id -> error text) for
    the calls that must not run. Applied once, before the message is stored or sent back."""
    calls = message.tool_calls
    if not calls:
        return message, {}
    refused: dict[str, str] = {}
    kept: list[ToolCall] = []
    cap = max(limits.max_calls_per_response, 0)
    for call in calls[:cap]:
        try:
            parse_arguments(call.name, call.arguments, limits, edits=call.name in edit_tools)
        except ArgumentsRejected as exc:
            # The oversized or over-deep text would be resent on every later request.
            refused[call.id] = str(exc)
            kept.append(replace(call, arguments=_note(call.arguments)))
            continue
        kept.append(call)
    if len(calls) > cap:
        first = calls[cap]
        dropped = len(calls) - cap - 1
        refused[first.id] = (
            f"Not run: this response asked for {len(calls):,} tool calls; at most {cap} run per "
            f"response ([limits] max_calls_per_response). The first {cap} ran; this call and "
            f"the {dropped:,} after it did not (those were dropped). Ask for fewer calls at once."
        )
        arguments = first.arguments
        if len(arguments) > 2_000:
            arguments = _note(arguments)
        kept.append(replace(first, arguments=arguments))
    if not refused:
        return message, {}
    return replace(message, tool_calls=tuple(kept)), refused


class StepBudget:
    """The characters the tool results of one step may add together. Each result is capped on
    its own first; once the budget is spent, what does not fit is replaced by a note that says
    the call ran (or failed) but its output was not kept."""

    def __init__(self, limits: ToolLimits = DEFAULT_LIMITS) -> None:
        self.total = limits.max_step_result_chars
        self.left = limits.max_step_result_chars

    def admit(self, content: str, is_error: bool) -> str:
        if len(content) <= self.left:
            self.left -= len(content)
            return content
        outcome = "failed" if is_error else "ran"
        note = (
            f"[output not kept from here: this call {outcome}, with {len(content):,} characters "
            f"of output, but the tool results of one step are limited to {self.total:,} "
            "characters ([limits] max_step_result_chars). Ask for less at once, e.g. fewer or "
            "narrower reads per step.]"
        )
        room = self.left - len(note) - 1
        # When part of it still fits, the head is kept before the note.
        kept = content[:room] + "\n" + note if room >= 500 else note
        self.left = max(self.left - len(kept), 0)
        return kept


def request_chars(messages: tuple[Message, ...] | list[Message]) -> int:
    """The text ``messages`` carry (contents, reasoning, call arguments), in characters:
    a cheap measure of a request's size, taken before every request."""
    from reasonix.messages import AssistantMessage

    total = 0
    for m in messages:
        total += len(m.content)
        if isinstance(m, AssistantMessage):
            total += len(m.reasoning_content or "")
            total += sum(len(c.arguments) + len(c.name) for c in m.tool_calls)
    return total


def check_request_size(
    messages: tuple[Message, ...] | list[Message], limits: ToolLimits = DEFAULT_LIMITS
) -> None:
    """Raise :class:`RequestTooLargeError` when the request is over ``max_request_chars``."""
    size = request_chars(messages)
    if size > limits.max_request_chars:
        raise RequestTooLargeError(
            f"The next request would carry {size:,} characters, over the "
            f"{limits.max_request_chars:,}-character limit ([limits] max_request_chars); it "
            "was not sent. Run /compact, start a new session, or raise the limit."
        )


class ConcurrencySlots:
    """At most ``limit`` tool executions at once, per event loop (a registry may be used from
    several ``asyncio.run`` calls, and a semaphore belongs to one loop)."""

    def __init__(self, limit: int) -> None:
        self.limit = max(limit, 1)
        self._by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore]
        self._by_loop = weakref.WeakKeyDictionary()

    def slot(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        sem = self._by_loop.get(loop)
        if sem is None:
            sem = self._by_loop[loop] = asyncio.Semaphore(self.limit)
        return sem


__all__ = [
    "DEFAULT_LIMITS",
    "ArgumentsRejected",
    "ConcurrencySlots",
    "RequestTooLargeError",
    "StepBudget",
    "ToolLimits",
    "bound_response",
    "check_request_size",
    "json_depth_exceeds",
    "parse_arguments",
    "request_chars",
    "write_in_parts_hint",
]
