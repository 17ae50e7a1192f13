"""Markdown code fences that the text inside cannot close.

A fence of backticks one longer than the longest run of backticks in the text (at least three)
ends only where we end it: text a stranger wrote (a command's output, a stored message) cannot
close the block early and continue as if it were ours or the user's.
"""

from __future__ import annotations

import re

__all__ = ["code_fence", "fence_for"]


def fence_for(text: str) -> str:
    """The shortest run of backticks (three or more) that ``text`` does not contain."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def code_fence(text: str, info: str = "") -> str:
    """``text`` in a fenced block no line of it can close; ``info`` is the block's language."""
    fence = fence_for(text)
    return f"{fence}{info}\n{text}\n{fence}"
