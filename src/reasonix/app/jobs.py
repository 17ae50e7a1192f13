"""A session's background jobs, as frontends see them.

The jobs themselves live in :mod:`reasonix.tools.builtin.jobs` (``bash`` with
``run_in_background``); this module builds a session's :class:`JobTable` from ``[jobs]`` and
words what frontends print: ``/jobs`` in the terminal app, the lines a headless run writes about
jobs still running at its end.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import TYPE_CHECKING

from reasonix.config import Config
from reasonix.events import Sink
from reasonix.terminal_text import one_line
from reasonix.tools.builtin.jobs import JobError, JobInfo, JobTable

if TYPE_CHECKING:
    from reasonix.app.command_types import Answer, Context

__all__ = [
    "describe_job",
    "ending_notes",
    "jobs_badge",
    "jobs_command",
    "jobs_listing",
    "session_jobs",
]


def session_jobs(config: Config, data_dir: Path, sink: Sink) -> JobTable:
    """The job table of one open session: logs in a folder of its own under the private data
    folder, the bounds and the keep rule of ``[jobs]``."""
    from reasonix.config import user_config_path
    from reasonix.config.trust import RUNNING_JOBS_DIR

    folder = data_dir / "jobs" / f"{os.getpid()}-{secrets.token_hex(4)}"
    return JobTable(
        folder,
        max_running=config.jobs.max_running,
        keep_on_exit=config.jobs.keep_on_exit,
        sink=sink,
        guard_records=user_config_path().parent / RUNNING_JOBS_DIR,
    )


def describe_job(job: JobInfo, width: int = 60) -> str:
    """One line: id, status, runtime, command."""
    command = one_line(job.command)
    if len(command) > width:
        command = command[: width - 1] + "…"
    status: str = job.status
    if job.exit_code is not None:
        status += f" ({job.exit_code})"
    if job.kept and job.status == "running":
        status += ", kept"
    return f"{job.id:<7} {status:<16} {_runtime(job.runtime_s):>7}  {command}"


def jobs_badge(table: JobTable) -> str:
    """The status line's word on jobs: how many are running ("" when none)."""
    running = len(table.running())
    if not running:
        return ""
    return f"{running} job{'s' if running > 1 else ''}"


def jobs_listing(jobs: list[JobInfo]) -> list[str]:
    """``/jobs``: one line per job of the session, or a line saying there are none."""
    if not jobs:
        return ["No background jobs in this session (bash with run_in_background starts one)."]
    return [describe_job(job) for job in jobs]


def ending_notes(running: list[JobInfo]) -> list[str]:
    """What a run that ends says about the jobs still running: stopped with it, or kept (with
    the pid to stop it by and the log its output goes to)."""
    notes = []
    for job in running:
        if job.kept:
            notes.append(
                f"background job {job.id} ({one_line(job.command)}) keeps running as pid "
                f"{job.pid}; its output goes to {job.log}"
            )
        else:
            notes.append(
                f"background job {job.id} ({one_line(job.command)}) was still running and was "
                "stopped with the session ([jobs] keep_on_exit = true keeps jobs)"
            )
    return notes


def _runtime(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f}s"
    if seconds < 3600:
        return f"{seconds // 60:.0f}m{seconds % 60:02.0f}s"
    return f"{seconds // 3600:.0f}h{seconds % 3600 // 60:02.0f}m"


async def jobs_command(ctx: Context) -> Answer:
    """``/jobs``, ``/jobs kill ID``, ``/jobs keep ID`` (the command table's row)."""
    from reasonix.app.command_types import Answer

    word, _, rest = ctx.arg.partition(" ")
    job_id = rest.strip()
    table = ctx.session.jobs
    try:
        if word == "keep" and job_id:
            info = table.keep(job_id)
            return Answer(f"{info.id} keeps running after the session ends (pid {info.pid}).")
        if word == "kill" and job_id:
            killed = await table.kill(job_id)
            if killed.status == "exited":
                return Answer(f"{killed.id} had already exited (exit code {killed.exit_code}).")
            return Answer(f"Stopped {killed.id} and its processes.")
    except JobError as exc:
        return Answer(str(exc), error=True)
    if word:
        return Answer("Usage: /jobs, /jobs kill <id>, /jobs keep <id>", error=True)
    return Answer("\n".join(jobs_listing(table.snapshot())))
