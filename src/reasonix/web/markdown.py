"""Model output as safe HTML for the dashboard.

The model's text is untrusted: it is rendered by markdown-it (CommonMark plus tables and
strikethrough) with raw HTML off, images shown as their alt text, and links only to ``http``,
``https`` and ``mailto`` (with ``rel="noopener noreferrer"``); code blocks are coloured by
pygments with class names (no inline style: the page's CSP allows none). The result then
passes an allowlist sanitiser that rebuilds every tag from a fixed table of elements and
attributes, so nothing the renderer might let through reaches the page.

:class:`MarkdownPass` sits in the event log: when a role's streamed text ends (a tool call,
its reasoning, the end of its turn), it adds a ``markdown`` event carrying that text as HTML,
which the page puts in place of the plain text it showed while streaming. It also gives the
planner gate's event its route in plain words (:data:`reasonix.control.gate.ROUTE_WORDS`).
"""

from __future__ import annotations

import html
from functools import lru_cache
from html.parser import HTMLParser
from typing import Any

__all__ = ["MarkdownPass", "render_markdown", "sanitise"]

#: element -> the attributes it may keep
_ALLOWED: dict[str, frozenset[str]] = {
    **{
        t: frozenset()
        for t in (
            "p", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "del", "s", "blockquote",
            "ul", "ol", "li", "table", "thead", "tbody", "tr", "th", "td", "hr", "br", "pre",
        )
    },
    "a": frozenset({"href", "rel", "target"}),
    "code": frozenset({"class"}),
    "span": frozenset({"class"}),
}  # fmt: skip
_VOID = frozenset({"hr", "br"})
_SCHEMES = ("http://", "https://", "mailto:")


def _safe_href(href: str) -> bool:
    return href.strip().lower().startswith(_SCHEMES)


class _Sanitiser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.open: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        allowed = _ALLOWED.get(tag)
        if allowed is None:
            return
        kept: list[str] = []
        for name, value in attrs:
            if name not in allowed or value is None:
                continue
            if name == "href" and not _safe_href(value):
                self._drop_link()
                return
            if name == "class" and not all(c.replace("-", "").isalnum() for c in value.split()):
                continue
            kept.append(f' {name}="{html.escape(value, quote=True)}"')
        if tag == "a":
            if not any(k.startswith(" href=") for k in kept):
                self._drop_link()
                return
            kept = [k for k in kept if k.startswith(" href=")]
            kept.append(' rel="noopener noreferrer" target="_blank"')
        self.out.append(f"<{tag}{''.join(kept)}>")
        if tag not in _VOID:
            self.open.append(tag)

    def _drop_link(self) -> None:
        self.open.append("")  # its text stays, as text; its end tag closes nothing

    def handle_endtag(self, tag: str) -> None:
        if tag in _VOID or tag not in _ALLOWED or (tag not in self.open and "" not in self.open):
            return
        while self.open:
            top = self.open.pop()
            if top:
                self.out.append(f"</{top}>")
            if top == tag or (top == "" and tag == "a"):
                break

    def handle_data(self, data: str) -> None:
        self.out.append(html.escape(data, quote=False))

    def result(self) -> str:
        self.close()
        while self.open:
            top = self.open.pop()
            if top:
                self.out.append(f"</{top}>")
        return "".join(self.out)


def sanitise(markup: str) -> str:
    """``markup`` rebuilt from the allowlist: unknown elements dropped (their text kept as
    text), unknown attributes dropped, links to other schemes shown as plain text."""
    parser = _Sanitiser()
    parser.feed(markup)
    return parser.result()


def _highlight(code: str, lang: str, attrs: str) -> str:
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import get_lexer_by_name
    from pygments.util import ClassNotFound

    try:
        lexer = get_lexer_by_name(lang) if lang else None
    except ClassNotFound:
        lexer = None
    if lexer is None:
        return ""  # markdown-it escapes it itself
    body = highlight(code, lexer, HtmlFormatter(nowrap=True, classprefix="hl-"))
    return f'<pre><code class="hl">{body}</code></pre>'


@lru_cache(maxsize=1)
def _renderer() -> Any:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "highlight": _highlight})
    md.enable(["table", "strikethrough"])
    md.disable("image")
    md.validateLink = _safe_href  # type: ignore[method-assign,assignment]
    return md


def render_markdown(text: str) -> str:
    """The model's markdown ``text`` as sanitised HTML (see the module docstring)."""
    return sanitise(_renderer().render(text))


#: events after which the page starts a new block for the role (the streamed text is over)
_ENDS_ROLE = frozenset({"tool_call", "reasoning_delta", "turn_started", "turn_ended"})
#: events after which the page starts new blocks for every role
_ENDS_ALL = frozenset({"turn_outcome", "user_message", "turn_mark"})


class MarkdownPass:
    """Adds a ``markdown`` event when a role's streamed text ends (see the module docstring)."""

    def __init__(self) -> None:
        self._text: dict[str, list[str]] = {}

    def feed(self, event: dict[str, Any]) -> list[dict[str, Any]]:
        kind = event.get("kind")
        role = str(event.get("role") or "controller")
        if kind == "text_delta":
            self._text.setdefault(role, []).append(str(event.get("text", "")))
            return [event]
        if kind == "gate_decided":
            from reasonix.control.gate import ROUTE_WORDS

            return [{**event, "words": ROUTE_WORDS.get(str(event.get("route")), "")}]
        if kind == "output_retracted":
            self._text.clear()
            return [event]
        if kind in _ENDS_ALL:
            out = [m for r in list(self._text) for m in self._flush(r)]
            return [*out, event]
        if kind in _ENDS_ROLE:
            return [*self._flush(role), event]
        return [event]

    def _flush(self, role: str) -> list[dict[str, Any]]:
        text = "".join(self._text.pop(role, []))
        if not text.strip():
            return []
        return [{"kind": "markdown", "role": role, "html": render_markdown(text)}]

    def all(self, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """A stored sequence with its ``markdown`` events (for a history or a resync)."""
        out = [m for e in events for m in self.feed(e)]
        return out + [m for r in list(self._text) for m in self._flush(r)]
