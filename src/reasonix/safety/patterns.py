"""Path and command patterns shared by the sandbox, the permission rules and the search tools.

Path patterns follow ``.gitignore`` conventions, because that is the syntax users already know:

- ``*`` and ``?`` never cross a ``/``; ``**`` does (``docs/**``, ``**/test_*.py``).
- A pattern with no ``/`` except a trailing one matches a name at any depth (``*.pem``,
  ``id_rsa*``); a pattern with an inner or leading ``/`` is anchored to the base (``docs/**``).
- A trailing ``/`` matches directories only (``.git/``); use :func:`match_path_or_parents` to
  treat everything inside such a directory as matched.

Command patterns (``bash(git status*)``) are simpler: ``*`` matches any run of characters,
spaces and slashes included (``\\*`` is a literal star), and the whole command must match.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass, field


def _translate(body: str) -> str:
    """Regex source for a glob body whose ``**`` segments have already been located."""
    out: list[str] = []
    i = 0
    n = len(body)
    while i < n:
        c = body[i]
        if c == "*":
            if body.startswith("**", i):
                # ``**`` inside a segment (``a**b``) behaves like ``*`` in git.
                i += 2
                if i < n and body[i] == "/":
                    # ``**/`` : zero or more whole directories.
                    out.append("(?:[^/]*/)*")
                    i += 1
                else:
                    out.append(".*")
                continue
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = body.find("]", i + 2 if i + 1 < n and body[i + 1] in "!^" else i + 1)
            if end == -1:
                out.append(re.escape(c))
            else:
                inner = body[i + 1 : end]
                if inner[:1] in ("!", "^"):
                    inner = "^" + inner[1:]
                out.append("[" + inner.replace("\\", "\\\\") + "]")
                i = end
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(body[i]))
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


@dataclass(frozen=True)
class PathPattern:
    """One gitignore-style pattern, compiled.

    ``anchored=None`` applies the gitignore rule (anchored when the pattern has an inner ``/``);
    ``True`` always anchors, as a shell glob does (the ``glob`` tool uses that).
    """

    pattern: str
    anchored: bool | None = None
    ignore_case: bool = False
    negated: bool = field(init=False)
    dir_only: bool = field(init=False)
    regex: re.Pattern[str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        body = self.pattern
        negated = body.startswith("!")
        if negated:
            body = body[1:]
        dir_only = body.endswith("/")
        body = body.rstrip("/")
        anchored = self.anchored
        if anchored is None:
            anchored = "/" in body
        body = body.lstrip("/")
        # ``dir/**`` matches everything inside ``dir`` but not ``dir`` itself.
        inside = body.endswith("/**")
        source = _translate(body[:-3]) + "/.*" if inside else _translate(body)
        if not anchored:
            source = "(?:.*/)?" + source
        object.__setattr__(self, "negated", negated)
        object.__setattr__(self, "dir_only", dir_only)
        flags = re.DOTALL | (re.IGNORECASE if self.ignore_case else 0)
        object.__setattr__(self, "regex", re.compile(r"\A" + source + r"\Z", flags))

    def match(self, relpath: str, *, is_dir: bool = False) -> bool:
        """Whether ``relpath`` (posix, relative to the pattern's base) matches, ignoring
        negation."""
        if self.dir_only and not is_dir:
            return False
        return self.regex.match(relpath) is not None


def compile_patterns(
    patterns: Iterable[str], *, anchored: bool | None = None, ignore_case: bool = False
) -> list[PathPattern]:
    """Compile patterns, skipping blank lines and ``#`` comments. ``ignore_case`` is for deny
    lists: on a case-insensitive file system ``.ENV`` opens ``.env``."""
    return [
        PathPattern(p, anchored, ignore_case)
        for p in (p.strip() for p in patterns)
        if p and not p.startswith("#")
    ]


def match_first(patterns: Iterable[PathPattern], relpath: str, *, is_dir: bool) -> str | None:
    """The last matching pattern decides (gitignore order); return it if it is not negated."""
    decided: PathPattern | None = None
    for p in patterns:
        if p.match(relpath, is_dir=is_dir):
            decided = p
    if decided is None or decided.negated:
        return None
    return decided.pattern


def match_path_or_parents(patterns: list[PathPattern], relpath: str, *, is_dir: bool) -> str | None:
    """The pattern matching ``relpath`` or any directory above it, or None.

    A matched directory covers everything inside it, so ``.git/`` protects ``.git/config``.
    """
    parts = relpath.split("/")
    for i in range(1, len(parts) + 1):
        last = i == len(parts)
        hit = match_first(patterns, "/".join(parts[:i]), is_dir=is_dir if last else True)
        if hit is not None:
            return hit
    return None


_WS_RE = re.compile(r"\s+")


def normalize_command(command: str) -> str:
    """Collapse runs of whitespace so ``git  status`` and ``git status`` match the same rules."""
    return _WS_RE.sub(" ", command).strip()


@functools.lru_cache(maxsize=1024)
def cached_path_pattern(pattern: str) -> PathPattern:
    """A compiled gitignore-style pattern, reused across calls (rules match on every call)."""
    return PathPattern(pattern)


@functools.lru_cache(maxsize=1024)
def command_pattern(pattern: str) -> re.Pattern[str]:
    """Compile a command pattern: ``*`` matches anything, ``\\*`` is a literal ``*`` and
    ``\\\\`` a literal backslash; the rest is literal."""
    out: list[str] = []
    text = normalize_command(pattern)
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\" and text[i + 1 : i + 2] in ("*", "\\"):
            out.append(re.escape(text[i + 1]))
            i += 2
            continue
        out.append(".*" if c == "*" else re.escape(c))
        i += 1
    return re.compile(r"\A" + "".join(out) + r"\Z", re.DOTALL)


def escape_command_pattern(command: str) -> str:
    """A command pattern matching exactly ``command`` (its ``*`` and ``\\`` escaped)."""
    return command.replace("\\", "\\\\").replace("*", "\\*")


def escape_path_pattern(path: str) -> str:
    """A path pattern matching exactly ``path``, anchored to the base (glob characters
    escaped, a leading ``/`` added so a top-level name does not match at every depth)."""
    escaped = re.sub(r"([*?\[\]\\!#])", r"\\\1", path)
    return escaped if "/" in escaped.rstrip("/") else "/" + escaped
