"""Review findings in the bash tool."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from reasonix.tools.builtin import default_tools
from reasonix.tools.registry import ToolContext, ToolRegistry


def process_gone(pid: int) -> bool:
    """Dead or a zombie; waits (not a timing assertion) for SIGKILL to be delivered."""
    status = Path(f"/proc/{pid}/status")
    for _ in range(500):
        try:
            state = next(ln for ln in status.read_text().splitlines() if ln.startswith("State:"))
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state.split()[1] in ("Z", "X"):
            return True
        time.sleep(0.01)
    return False


@pytest.mark.skipif(shutil.which("setsid") is None, reason="setsid (util-linux) is not installed")
@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs Linux /proc")
async def test_a_process_that_left_the_group_with_setsid_is_stopped_too(tmp_path: Path) -> None:
    reg = ToolRegistry(default_tools(tmp_path))
    command = (
        "setsid -f sh -c 'echo $$ > daemon.pid; exec sleep 300' >/dev/null 2>&1; "
        "while [ ! -s daemon.pid ]; do sleep 0.01; done; echo started"
    )
    result = await reg.execute(
        "bash", json.dumps({"command": command}), ToolContext(workspace=tmp_path)
    )
    assert result.content.startswith("started"), result.content
    pid = int((tmp_path / "daemon.pid").read_text())
    assert process_gone(pid), f"process {pid} started with setsid outlived the command"
