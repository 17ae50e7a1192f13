"""Built-in coding tools (files, search, shell). Filled in by the tools issue."""

from __future__ import annotations

from pathlib import Path

from reasonix.tools.registry import Tool


def default_tools(workdir: Path) -> list[Tool]:
    """The built-in tools confined to ``workdir``."""
    return []
