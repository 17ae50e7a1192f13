"""Built-in coding tools: files, search and shell, all confined to a workspace sandbox.

==============  ========  =========================================================
tool            category  notes
==============  ========  =========================================================
``read_file``   read      numbered lines, size caps, binary files described
``ls``          read      one folder
``glob``        read      file names by pattern, respects .gitignore
``grep``        read      regex search (ripgrep when installed), respects .gitignore
``write_file``  edit      creates parent folders; reports a diff
``edit_file``   edit      exact, then whitespace-tolerant unique match
``multi_edit``  edit      several edits to one file, all or none
``delete_file`` edit      destructive; checkpointed, so a rewind restores the file
``bash``        bash      destructive; timeout, capped output, secrets removed
``job``         jobs      a background job's new output, or stop it (executor only)
``web_fetch``   web       a URL as markdown, paged; public addresses only by default
==============  ========  =========================================================
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reasonix.safety.checkpoints import CheckpointManager
from reasonix.safety.sandbox import Sandbox
from reasonix.tools.builtin.files import FileTools, file_tools
from reasonix.tools.builtin.jobs import JobTable, job_tools
from reasonix.tools.builtin.search import SearchTools, search_tools
from reasonix.tools.builtin.shell import ShellOptions, ShellTool
from reasonix.tools.builtin.web import WebOptions, web_tool
from reasonix.tools.limits import DEFAULT_LIMITS, ToolLimits
from reasonix.tools.registry import Tool, ToolRegistry

__all__ = [
    "FileTools",
    "JobTable",
    "SearchTools",
    "ShellOptions",
    "ShellTool",
    "WebOptions",
    "default_registry",
    "default_tools",
    "file_tools",
    "job_tools",
    "search_tools",
]


def default_tools(
    workdir: str | Path,
    *,
    sandbox: Sandbox | None = None,
    checkpoints: CheckpointManager | None = None,
    shell_options: ShellOptions | None = None,
    use_rg: bool | None = None,
    web_options: WebOptions | None = None,
    limits: ToolLimits = DEFAULT_LIMITS,
    jobs: JobTable | None = None,
) -> list[Tool]:
    """The built-in tools confined to ``workdir`` (or to ``sandbox``'s roots when given).

    ``checkpoints`` is used by the writers and ``bash`` when ``CHECKPOINTS_KEY`` in ``ctx.state``
    holds no manager; with neither, nothing is checkpointed. ``web_options`` sets
    ``web_fetch``'s limits and the user's exceptions to its address rules. ``limits`` bounds
    what one write may hold (``max_write_bytes``). With ``jobs``, ``bash`` can start background
    jobs into that table (the reading and stopping tools come from :func:`job_tools`).
    """
    box = sandbox or Sandbox([Path(workdir)])
    shell = ShellTool(
        box.workspace, roots=box.roots, options=shell_options, checkpoints=checkpoints, jobs=jobs
    )
    return [
        *FileTools(
            box,
            checkpoints,
            max_write_bytes=limits.max_write_bytes,
            max_image_bytes=limits.max_image_bytes,
            image_detail=limits.image_detail,
        ).tools(),
        *SearchTools(box, use_rg=use_rg).tools(),
        shell.tool(),
        web_tool(web_options),
    ]


def default_registry(workdir: str | Path, **kwargs: Any) -> ToolRegistry:
    """A registry of the built-in coding tools confined to ``workdir``; ``kwargs`` go to
    :class:`~reasonix.tools.registry.ToolRegistry` (``policy=``, ``limits=``, ...). It lives
    here, above the safety layer, and not on the registry: the tool contract sits below
    ``reasonix.safety`` and must not reach up to the built-ins that import it."""
    return ToolRegistry(default_tools(Path(workdir)), **kwargs)
