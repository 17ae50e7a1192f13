"""Stopping what a shell command started: its process group, and on Linux the processes that
left it (found by the marker variable in their environment)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal

__all__ = ["MARKER_ENV", "kill_marked", "signal_group", "stop_group"]

MARKER_ENV = "REASONIX_COMMAND"


def kill_marked(marker: str) -> None:
    """SIGKILL every process of ours whose environment carries ``marker`` (Linux ``/proc``):
    what a command started in a new session or process group escapes ``killpg``."""
    needle = f"{MARKER_ENV}={marker}".encode()
    try:
        pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return
    own = os.getpid()
    for pid in pids:
        if pid == own:
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                environ = f.read()
        except OSError:  # gone, or not ours
            continue
        if needle in environ.split(b"\0"):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


def signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def stop_group(proc: asyncio.subprocess.Process, grace: float) -> None:
    signal_group(proc.pid, signal.SIGTERM)
    try:
        await asyncio.wait_for(proc.wait(), grace)
    except TimeoutError:
        pass
    signal_group(proc.pid, signal.SIGKILL)
    await proc.wait()
