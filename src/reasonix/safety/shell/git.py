"""A git command line parsed once (git's own options, the subcommand, its arguments), for every
view that must know what a git command does.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["READING_OPTIONS", "VALUED", "GitCall", "parse_git"]

Token = str | None
Form = tuple[Token, ...]

#: git's own options whose value is the next word (or follows ``=``).
VALUED = frozenset(
    {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--config-env",
     "--list-cmds", "--attr-source"}
)  # fmt: skip

#: git's own options that change nothing but how it reads and shows: the only ones a command
#: proved read-only may be given (``-C`` with a folder aside).
READING_OPTIONS = frozenset(
    {"--no-pager", "-P", "--no-optional-locks", "--literal-pathspecs", "--glob-pathspecs",
     "--noglob-pathspecs", "--icase-pathspecs", "--no-replace-objects"}
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class GitCall:
    """``git OPTIONS SUB ARGS``: ``options`` in order as ``(name, value)`` (the value None for
    a flag, or when it is missing or known only at run time), the subcommand (None when there
    is none) and its arguments. ``complete`` is False when a word among git's own options is
    known only at run time: what follows it cannot be told apart."""

    options: tuple[tuple[str, Token], ...]
    sub: Token
    args: Form
    complete: bool = True

    def values(self, name: str) -> list[Token]:
        """The values given to one of git's own options (``-c``: every setting)."""
        return [value for option, value in self.options if option == name]

    def has(self, *names: str) -> bool:
        return any(option in names for option, _ in self.options)


def parse_git(rest: Form) -> GitCall:
    """The words after ``git`` as a :class:`GitCall`."""
    options: list[tuple[str, Token]] = []
    i = 0
    while i < len(rest):
        tok = rest[i]
        if tok is None:
            return GitCall(tuple(options), None, rest[i:], complete=False)
        if not tok.startswith("-"):
            break
        i += 1
        if tok.startswith("-c") and len(tok) > 2 and not tok.startswith("--"):
            options.append(("-c", tok[2:]))
            continue
        name, eq, value = tok.partition("=")
        if eq and name.startswith("--"):
            options.append((name, value))
        elif tok in VALUED:
            options.append((tok, rest[i] if i < len(rest) else None))
            i += 1
        else:
            options.append((tok, None))
    if i >= len(rest):
        return GitCall(tuple(options), None, ())
    return GitCall(tuple(options), rest[i], rest[i + 1 :])
