"""A writer child's private copy (:mod:`reasonix.safety.worktree`) against real git and real
files: what its diff names is every path the patch touches."""

from __future__ import annotations

import os
from pathlib import Path

from reasonix.safety.worktree import make_worktree


def test_a_rename_names_the_old_path_too(tmp_path: Path) -> None:
    # The parent asks before a diff that writes a protected path (delegation's ask check reads
    # ``names``): a protected file the child moved away is a path the patch deletes.
    workspace = tmp_path / "ws"
    workspace.mkdir()
    settings = '{"mcpServers": {"tool": {"command": "sh", "args": ["start.sh"]}}}\n' * 4
    (workspace / ".mcp.json").write_text(settings)
    (workspace / "main.py").write_text("print('hi')\n")
    tree = make_worktree(workspace, tmp_path / "trees", "child")
    try:
        os.rename(tree.path / ".mcp.json", tree.path / "notes.json")
        diff = tree.diff()
        assert set(diff.names) == {".mcp.json", "notes.json"}, diff.names
        assert diff.files == 2
        assert "deleted file" in diff.patch and ".mcp.json" in diff.stat
        tree.apply(diff.patch)
        assert not (workspace / ".mcp.json").exists()
        assert (workspace / "notes.json").read_text() == settings
    finally:
        tree.remove()
