"""Snapshot tests' helpers: the state of a folder (modes and bytes), real tools run as the agent
would with a checkpoint manager in their context, a seeded workspace, a manager for it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from reasonix.config import CheckpointsConfig
from reasonix.safety.checkpoints import CheckpointManager
from reasonix.tools.builtin import default_tools
from reasonix.tools.registry import ToolContext, ToolRegistry

State = dict[str, tuple[int, bytes]]


def state(ws: Path) -> State:
    """Every file and symlink (not ``.git``, not the data folder): full mode and bytes."""
    out: State = {}
    for folder, dirs, files in os.walk(ws):
        for skip in (".git", "data"):
            if Path(folder) == ws and skip in dirs:
                dirs.remove(skip)
        for name in files + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
            path = os.path.join(folder, name)
            data = os.readlink(path).encode() if os.path.islink(path) else Path(path).read_bytes()
            out[os.path.relpath(path, ws)] = (os.lstat(path).st_mode, data)
    return out


class Steps:
    """Runs real tools as the agent would, with the manager in the context's state."""

    def __init__(self, ws: Path, manager: CheckpointManager) -> None:
        self.ws = ws
        self.manager = manager
        self.registry = ToolRegistry(default_tools(ws, use_rg=False))
        self.calls = 0

    async def __call__(self, turn: int, name: str, **args: Any) -> None:
        self.calls += 1
        ctx = ToolContext(
            workspace=self.ws,
            turn=turn,
            call_id=f"call-{self.calls}",
            state={"checkpoints": self.manager},
        )
        result = await self.registry.execute(name, json.dumps(args), ctx)
        assert not result.is_error, result.content
        self.manager.after_turn(turn)  # the files as the agent left them, as the session does


def seed(ws: Path) -> None:
    (ws / "a.txt").write_bytes(b"alpha\n")
    (ws / "b.py").write_bytes(b"def b():\r\n    return 1\r\n")  # CRLF must come back as CRLF
    (ws / "c.txt").write_bytes(b"gamma, no final newline")
    (ws / "tool.sh").write_bytes(b"#!/bin/sh\necho hi\n")
    (ws / "tool.sh").chmod(0o755)
    (ws / "private.key").write_bytes(b"k\n")
    (ws / "private.key").chmod(0o600)
    # Attributes that would rewrite line endings or run filters must not touch our copies.
    (ws / ".gitattributes").write_text("* text eol=crlf\n*.txt filter=planted ident\n")


def manager_for(tmp_path: Path, ws: Path, **settings: Any) -> CheckpointManager:
    return CheckpointManager(
        ws, data_dir=tmp_path / "data", session_id="s1", settings=CheckpointsConfig(**settings)
    )
