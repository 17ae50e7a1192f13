"""The interactive app imports in the background in one thread at a time.

The session's subsystems load while the user types (the prompt comes first). Two threads that
import at once can meet inside a cycle of package imports, where Python hands one of them a
module that is not whole: ``module 'reasonix.app.session' has no attribute 'AgentSession'`` was
seen once at start-up. The real ``reasonix`` runs in a pseudo-terminal with an audit hook that
notes which thread starts each import; the user types at once (``/exit``, which needs Rich on
the main thread while the session is still loading)."""

from __future__ import annotations

import sys
from pathlib import Path

import pexpect
import pytest

from tests.support.interactive import spawn
from tests.support.project import Project, project

__all__ = ["project"]

pytestmark = [
    pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty"),
    pytest.mark.slow,
]

HOOK = """
import os, sys, threading
_out = open(os.environ["REASONIX_TEST_IMPORT_LOG"], "a", buffering=1)
_lock = threading.Lock()
def _hook(event, args):
    if event == "import":
        with _lock:
            _out.write(threading.current_thread().name + "\\t" + str(args[0]) + "\\n")
sys.addaudithook(_hook)
"""


def imports_at_start(project: Project, tmp_path: Path) -> list[tuple[str, str]]:
    """(thread name, module) for every module the app loads from start to ``/exit``."""
    hook_dir = tmp_path / "hook"
    hook_dir.mkdir()
    (hook_dir / "sitecustomize.py").write_text(HOOK)
    log = tmp_path / "imports.log"
    child = spawn(project, PYTHONPATH=str(hook_dir), REASONIX_TEST_IMPORT_LOG=str(log))
    try:
        child.expect("›")
        child.sendline("/exit")
        child.expect(pexpect.EOF, timeout=60)
    finally:
        child.close(force=True)
    rows = [line.split("\t", 1) for line in log.read_text().splitlines()]
    return [(thread, module) for thread, module in rows]


def test_one_thread_imports_in_the_background_and_alone(project: Project, tmp_path: Path) -> None:
    events = imports_at_start(project, tmp_path)
    assert ("MainThread", "prompt_toolkit") in events  # the hook saw the start-up (control)
    # The frontend's background work: up to the HTTP client, the last thing it loads (the
    # session's own workers, the snapshot and the connection, start after it).
    end = max(i for i, (_, module) in enumerate(events) if module.startswith("httpx"))
    early = events[: end + 1]
    background = [i for i, (thread, _) in enumerate(early) if thread != "MainThread"]
    threads = {early[i][0] for i in background}
    assert len(threads) == 1, threads
    # while it imports, the main thread imports nothing (it waits for it first)
    beside = [module for thread, module in early[background[0] :] if thread == "MainThread"]
    assert beside == [], beside
    assert ("MainThread", "reasonix.app.session") not in events
