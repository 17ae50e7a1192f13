"""The job table with real processes: bounded reads, filters, the running bound, exit codes,
and the supervisor that stops a job when the agent process dies outright (SIGKILL: no clean-up
code of ours runs), unless the job is kept."""

from __future__ import annotations

import asyncio
import os
import secrets
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from reasonix.events import CollectingSink
from reasonix.tools.builtin.jobs import JobEnded, JobError, JobStarted, JobTable
from tests.security.support import processes_with_arg, still_running


def bash(script: str) -> list[str]:
    return ["bash", "-c", script]


async def test_reads_are_bounded_and_filtered_and_the_exit_code_is_reported(
    tmp_path: Path,
) -> None:
    sink = CollectingSink()
    table = JobTable(tmp_path / "jobs", output_limit=200, sink=sink)
    job = table.start(
        bash("seq 1 5000; echo marker-a; echo marker-b; exit 3"),
        command="count",
        cwd=tmp_path,
        env=dict(os.environ),
    )
    # Wait for the end: a running job's read waits for output, an ended one's does not.
    while (await table.read(job.id, pattern="^never$", wait=0.2)).startswith("[job-1: running"):
        pass
    table_info = table.snapshot()[0]
    assert table_info.status == "exited" and table_info.exit_code == 3
    again = await table.read(job.id)
    assert again == "[job-1: exited, 0 s, exit code 3]\n(no new output)"
    assert [type(e) for e in sink.events] == [JobStarted, JobEnded]
    await table.close()


async def test_a_large_burst_keeps_its_head_and_tail(tmp_path: Path) -> None:
    table = JobTable(tmp_path / "jobs", output_limit=200)
    job = table.start(bash("seq 1 5000"), command="seq", cwd=tmp_path, env=dict(os.environ))
    while job.process.poll() is None:
        await table.read(job.id, pattern="^$", wait=0.1)
    job.offset = 0  # read the whole log once more, as one burst
    text = await table.read(job.id)
    assert "\n1\n2\n" in text and text.rstrip().endswith("5000")
    assert "bytes of output skipped" in text
    assert len(text) < 400
    await table.close()


async def test_filter_errors_and_the_running_bound_say_what_to_do(tmp_path: Path) -> None:
    table = JobTable(tmp_path / "jobs", max_running=1)
    table.start(bash("sleep 30"), command="one", cwd=tmp_path, env=dict(os.environ))
    with pytest.raises(JobError, match=r"\[jobs\] max_running"):
        table.start(bash("sleep 30"), command="two", cwd=tmp_path, env=dict(os.environ))
    with pytest.raises(JobError, match="not a valid regular expression"):
        await table.read("job-1", pattern="(")
    with pytest.raises(JobError, match="jobs: job-1"):
        await table.read("job-9")
    assert await table.close() == []
    assert table.running() == []


async def test_a_read_at_the_end_waits_for_the_undo_and_reports_it(tmp_path: Path) -> None:
    """The watcher notices the end and starts the clean-up (which undoes the job's plants);
    a read that comes meanwhile waits for it and carries its note. Before, the read saw
    "exited" and went out without the note while the undo was still under way: the plant
    was undone silently (a loaded machine made the clean-up slow enough to lose the race)."""
    began, release = threading.Event(), threading.Event()

    def cleanup() -> list[str]:
        began.set()
        release.wait(30)
        return [".mcp.json"]

    table = JobTable(tmp_path / "jobs")
    job = table.start(
        bash("exit 0"), command="plant", cwd=tmp_path, env=dict(os.environ), cleanup=cleanup
    )
    while not began.is_set():  # the watcher saw the end and is cleaning up
        await asyncio.sleep(0.05)
    reading = asyncio.create_task(table.read(job.id, wait=10))
    await asyncio.wait({reading}, timeout=1.0)  # without the wait, the read ends in here
    release.set()
    text = await reading
    assert text.startswith("[job-1: exited, ") and "exit code 0" in text, text
    assert "reasonix undid what the job did to .mcp.json" in text, text
    killed = await table.kill(job.id)  # a kill after the end waits for nothing more
    assert killed.status == "exited"
    await table.close()


AGENT = textwrap.dedent(
    """
    import asyncio, os, signal, sys
    from pathlib import Path
    from reasonix.tools.builtin.jobs import JobTable

    async def main():
        table = JobTable(Path(sys.argv[1]), keep_on_exit=sys.argv[2] == "keep")
        started = Path(sys.argv[1]).parent / "started"
        script = f"echo > {started}; exec sleep 600 # " + sys.argv[3]
        table.start(["bash", "-c", script], command="sleep", cwd=Path.cwd(), env=dict(os.environ))
        while not started.exists():  # the job itself runs, not only its supervisor
            await asyncio.sleep(0.05)
        print(table.snapshot()[0].pid, flush=True)
        sys.stdin.readline()  # until the test has seen the job running
        os.kill(os.getpid(), signal.SIGKILL)

    asyncio.run(main())
    """
)


@pytest.mark.slow
@pytest.mark.parametrize("keep", [False, True], ids=["not-kept", "kept"])
def test_a_job_ends_when_the_agent_is_killed_outright_unless_kept(
    tmp_path: Path, keep: bool
) -> None:
    token = f"orphan-{secrets.token_hex(6)}"
    with subprocess.Popen(
        [sys.executable, "-c", AGENT, str(tmp_path / "jobs"), "keep" if keep else "no", token],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as agent:
        assert agent.stdout is not None and agent.stdin is not None
        pid = int(agent.stdout.readline())
        # The control: the probe sees the job while the agent lives.
        assert processes_with_arg(token)
        agent.stdin.write("\n")
        agent.stdin.flush()
        assert agent.wait(timeout=60) == -signal.SIGKILL
    try:
        if keep:
            assert processes_with_arg(token)
        else:
            assert still_running(token) == []
    finally:
        if keep:
            os.killpg(pid, signal.SIGKILL)
            assert still_running(token) == []


async def test_a_log_past_its_bound_is_emptied_and_the_next_read_says_so(
    tmp_path: Path,
) -> None:
    import asyncio

    table = JobTable(tmp_path / "jobs")
    table.max_log_bytes = 10_000
    job = table.start(
        bash("seq 1 40000; sleep 30"), command="burst", cwd=tmp_path, env=dict(os.environ)
    )
    for _ in range(600):
        if job.dropped:
            break
        await asyncio.sleep(0.05)
    text = await table.read(job.id)
    assert "bytes dropped unread: the log passed its bound" in text
    assert job.log.stat().st_size <= 10_000
    await table.close()


async def test_the_status_line_counts_the_running_jobs(tmp_path: Path) -> None:
    from reasonix.app.jobs import jobs_badge

    table = JobTable(tmp_path / "jobs")
    assert jobs_badge(table) == ""
    for _ in range(2):
        table.start(bash("sleep 30"), command="s", cwd=tmp_path, env=dict(os.environ))
    assert jobs_badge(table) == "2 jobs"
    await table.kill("job-1")
    assert jobs_badge(table) == "1 job"
    await table.close()
    assert jobs_badge(table) == ""
