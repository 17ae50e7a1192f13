"""Fault injection: ``reasonix run`` killed with SIGKILL at seeded random moments.

A scripted multi-step task (tool calls that write files and run commands, each answer stalling
a little mid-stream so kills land inside turns, streams and tool runs) is killed over and over.
After every kill: the session database passes ``PRAGMA integrity_check``; every message the
client had sent to the server (all of them were committed before the request went out) is
loaded back intact and in order; and resuming the session with ``--resume`` sends a request the
fake server accepts.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reasonix.messages import message_to_dict
from reasonix.store import SessionStore
from reasonix.testing import FakeDeepSeekServer, Fault, Reply
from reasonix.testing.fake_server import RecordedRequest
from tests.support.faults import Tally, tally
from tests.support.project import Project

__all__ = ["tally"]

pytestmark = pytest.mark.slow

RUNS = 20
SEED = 8_675_309
#: the runs are shared out over this many tests (each its own store), so parallel test
#: processes take them side by side; every chunk still kills into a store that has sessions
CHUNKS = 2
STEPS = 8
RESUME = "continue after the crash"


def handler(request: RecordedRequest) -> Reply:
    messages = request.messages
    if messages[-1].get("content") == RESUME:
        return Reply.text("Resumed; the earlier work is in the session.")
    done = sum(1 for m in messages if m["role"] == "tool")
    stall = Fault(stall_seconds=0.15, stall_after_bytes=180)
    if done >= STEPS:
        return Reply(content="All steps done.", fault=stall)
    if done % 2 == 0:
        call = Reply.call(
            "write_file",
            {"path": f"notes/step{done}.txt", "content": f"step {done}\n" * 20},
            reasoning=f"Write the notes of step {done}.",
        )
    else:
        call = Reply.call(
            "bash", {"command": f"echo step {done} && ls notes"}, reasoning="Check the notes."
        )
    return Reply(reasoning=call.reasoning, tool_calls=call.tool_calls, fault=stall)


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Project]:
    root = tmp_path / "proj"
    root.mkdir()
    with FakeDeepSeekServer(handler=handler) as ex, FakeDeepSeekServer() as pl:
        p = Project(root, tmp_path / "data", tmp_path / "cfg", ex, pl)
        p.config_dir.mkdir()
        p.write_toml()
        yield p


def _wire(messages: list[Any]) -> list[dict[str, Any]]:
    return [m.to_wire() for m in messages]


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_sigkill_at_random_moments_never_loses_committed_messages(
    project: Project, tally: Tally, chunk: int
) -> None:
    rng = random.Random(SEED + chunk)
    runs = RUNS // CHUNKS
    db_path = project.data / "sessions.db"
    failures: list[str] = []
    outcomes = {"killed": 0, "finished before the kill": 0, "killed before a session": 0}
    for run in range(runs):
        # The kill lands a random time after the run's first request reached the server, not
        # after a fixed delay from start-up: on a loaded machine start-up alone can take longer
        # than any fixed delay, and the run would be killed before it did anything.
        delay = rng.uniform(0.0, 1.5)
        known = _session_ids(db_path)
        first = len(project.ex.requests)
        proc = subprocess.Popen(
            [sys.executable, "-m", "reasonix", "run", "--yes", "--no-planner", "do the steps"],
            cwd=project.root,
            env=project.env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 300  # a generous bound: start-up on a loaded machine
        while len(project.ex.requests) == first and proc.poll() is None:
            if time.monotonic() > deadline:
                break
            time.sleep(0.01)
        time.sleep(delay)
        finished = proc.poll() is not None
        if not finished:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        assert proc.stderr is not None
        proc.stderr.close()
        sent = [r for r in project.ex.requests[first:] if r.status == 200]
        try:
            problems = _check_after_kill(project, db_path, known, sent)
        except Exception as exc:  # keep the other runs' figures; report this one in full
            problems = [f"the check raised {type(exc).__name__}: {exc}"]
        if problems and problems[0] == "no session":
            outcomes["killed before a session"] += 1
            problems = [] if not sent else ["requests were sent but no session was stored"]
        else:
            outcomes["finished before the kill" if finished else "killed"] += 1
        tally.add(survived=not problems)
        if problems:
            failures.append(f"run {run} (kill after {delay:.2f} s): " + "; ".join(problems))
    print(f"\n{runs} runs: {outcomes}")
    assert failures == []
    assert outcomes["killed"] >= runs // 2


def _session_ids(db_path: Path) -> set[str]:
    if not db_path.exists():
        return set()
    with SessionStore(db_path) as store:
        return {s.id for s in store.list_sessions(limit=1000)}


def _check_after_kill(
    project: Project, db_path: Path, known: set[str], sent: list[RecordedRequest]
) -> list[str]:
    if not db_path.exists():
        return ["no session"]
    conn = sqlite3.connect(db_path)
    try:
        (integrity,) = conn.execute("PRAGMA integrity_check").fetchone()
    finally:
        conn.close()
    if integrity != "ok":
        return [f"integrity_check: {integrity}"]
    with SessionStore(db_path) as store:
        new = [s for s in store.list_sessions(limit=1000) if s.id not in known]
        if not new:
            return ["no session"]
        (session,) = new
        stored = store.load_messages(session.id, "executor")
    problems = []
    # every message a request carried had been committed before the request went out
    if sent:
        last = sent[-1].messages
        if _wire(stored)[: len(last)] != last:
            problems.append(
                f"stored {len(stored)} messages do not start with the {len(last)} last sent"
            )
    # whatever came after is a clean continuation (a stored assistant answer, tool results)
    if any(
        message_to_dict(m).get("role") not in ("system", "user", "assistant", "tool")
        for m in stored
    ):
        problems.append("a stored message has no valid role")
    # resume: the next request must be accepted and start with everything stored
    first = len(project.ex.requests)
    resumed = project.run(
        "run",
        "--yes",
        "--no-planner",
        "--resume",
        session.id,
        "--output-format",
        "json",
        RESUME,
        timeout=300,
    )
    requests = project.ex.requests[first:]
    if resumed.returncode != 0 or not requests:
        problems.append(f"resume failed ({resumed.returncode}): {resumed.stderr[-400:]}")
    elif any(r.status != 200 for r in requests):
        problems.append(f"resumed request rejected: {[r.error for r in requests]}")
    else:
        body = requests[0].messages
        if body[: len(stored)] != _wire(stored):
            problems.append("the resumed request does not replay the stored messages")
        if json.loads(resumed.stdout)["result"] != "Resumed; the earlier work is in the session.":
            problems.append(f"unexpected resume result {resumed.stdout[:200]}")
    return problems
