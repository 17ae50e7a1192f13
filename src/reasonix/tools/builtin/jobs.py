"""Background shell jobs: ``bash`` with ``run_in_background``, ``bash_output`` and ``kill_shell``.

A job is a command ``bash`` starts and does not wait for (a dev server, a watcher, a long build).
It runs with exactly what a foreground command gets: the same confined command line (the
:class:`~reasonix.safety.confinement.Confiner`), the same allowlisted environment, the same
snapshot before it starts and the same permission check (the call is a ``bash`` call). What
differs is only what surrounds it:

- Its output (stdout and stderr together) goes to a log file in our private data folder
  (``<data>/jobs/<run>/job-N.log``, which no command can see), so a job never blocks on a full
  pipe and its output outlives a read. ``bash_output`` returns what is new since the last read,
  at most ``output_limit`` characters (the head and the tail of it when more arrived), optionally
  only the lines matching a regular expression, and can wait for new output.
- It runs under a small supervisor (a Python process of the agent's user, outside the sandbox:
  it only starts the confined command line and waits for it). The supervisor leads the job's
  process group and asks the kernel to tell it when the agent dies (``PR_SET_PDEATHSIG``): then
  it stops the whole group, unless the job is *kept* (a ``<log>.keep`` file, made by
  ``[jobs] keep_on_exit`` or ``/jobs keep``). So a job ends with the session that started it
  even when the agent is killed outright, and a kept job survives it on purpose. (The kernel's
  notice is Linux's; elsewhere only a session that closes stops its jobs.)
- :meth:`JobTable.close` (the session closing) stops every job that is not kept: SIGTERM to the
  group, then SIGKILL; a process that left the group is found by the command's marker variable
  like ``bash`` does (under bubblewrap, the sandbox's own PID namespace takes everything in it).

Residual risk, as for ``bash``: unconfined (``[sandbox] bash = "off"``), a process that left the
group *and* cleared its environment can outlive the job.

It runs past 500 lines because a job's life is one record shared by every part here: the
supervisor it starts under, the log it writes, the reads that advance its offset, the kill that
signals its group and the session's close all read and change the same ``Job`` under the same
rules; the tools at the end are thin wrappers over that table.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from reasonix.events import Event, NullSink, Sink
from reasonix.terminal_text import strip_escape_sequences
from reasonix.tools.registry import Tool, ToolResult

__all__ = [
    "JOB_SUPERVISOR",
    "Job",
    "JobEnded",
    "JobError",
    "JobInfo",
    "JobStarted",
    "JobTable",
    "job_tools",
]

JobStatus = Literal["running", "exited", "killed"]

#: The supervisor each job runs under (``python -I -S <folder>/supervise.py <agent pid> <keep
#: file> <argv...>``); see the module docstring. Dependency-free so it starts in milliseconds.
JOB_SUPERVISOR = r"""
import os, signal, sys, time
agent, keep, argv = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
child = 0
def orphaned(*_):
    if os.path.exists(keep):
        return
    try:
        os.killpg(0, signal.SIGTERM)
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline and child and os.waitpid(child, os.WNOHANG) == (0, 0):
            time.sleep(0.05)
    except OSError:
        pass
    os.killpg(0, signal.SIGKILL)
signal.signal(signal.SIGUSR2, orphaned)
try:
    import ctypes
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGUSR2)
except (OSError, AttributeError):
    pass
if os.getppid() != agent and not os.path.exists(keep):
    sys.exit(143)  # the agent died before the notice was armed, and the job was not kept
# SIGTERM to the group is for the job; the supervisor waits for it to end and reports that.
signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = os.fork()
if child == 0:
    signal.signal(signal.SIGUSR2, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        os.execvp(argv[0], argv)
    finally:
        os._exit(127)
while True:
    try:
        _, status = os.waitpid(child, 0)
        break
    except ChildProcessError:
        sys.exit(0)
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
"""

_WAIT_STEP = 0.1
_WATCH_STEP = 0.25
#: a job's log on disk is emptied when it grows past this (what was not read yet is dropped,
#: and the next read says how much), so a chatty server cannot fill the disk
MAX_LOG_BYTES = 64 * 1024 * 1024


class JobError(Exception):
    """A job cannot be started, read or stopped; the message says why and what to do."""


@dataclass(frozen=True, slots=True)
class JobStarted(Event):
    """A background job started (``bash`` with ``run_in_background``)."""

    kind: ClassVar[str] = "job_started"
    job_id: str
    command: str
    pid: int


@dataclass(frozen=True, slots=True)
class JobEnded(Event):
    """A background job ended: ``status`` ``exited`` (by itself) or ``killed`` (by
    ``job`` with ``action: kill``, ``/jobs kill`` or the session closing)."""

    kind: ClassVar[str] = "job_ended"
    job_id: str
    status: str
    exit_code: int | None


@dataclass(frozen=True, slots=True)
class JobInfo:
    """What a frontend shows of a job (``/jobs``, the headless result's ``jobs``)."""

    id: str
    command: str
    status: JobStatus
    pid: int
    runtime_s: float
    exit_code: int | None
    kept: bool
    log: str
    #: the executor turn that started it (0: unknown), and when it ran (wall clock: ``ended``
    #: None while it runs), so a rewind can say what changed while it ran
    turn: int = 0
    started_at: float = 0.0
    ended_at: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "command": self.command,
            "status": self.status,
            "pid": self.pid,
            "runtime_s": round(self.runtime_s, 1),
            "exit_code": self.exit_code,
            "kept": self.kept,
            "log": self.log,
        }


@dataclass(eq=False)
class Job:
    """One background job; :class:`JobTable` owns it."""

    id: str
    command: str
    process: subprocess.Popen[bytes]
    log: Path
    began: float
    #: run when the job ended: kills what escaped its group, undoes its plants (the names of
    #: what it undid, for the job's report)
    cleanup: Callable[[], Sequence[str] | None]
    over_bound: Callable[[int], bool] | None = None
    status: JobStatus = "running"
    exit_code: int | None = None
    ended: float | None = None
    #: bytes of the log already returned by ``bash_output``
    offset: int = 0
    #: bytes dropped unread since the last read (the log passed :data:`MAX_LOG_BYTES`)
    dropped: int = 0
    #: why the host stopped it, when it did (too many processes)
    note: str = ""
    watcher: asyncio.Task[None] | None = field(default=None, repr=False)
    #: the clean-up after the end, once started: every caller that sees the end awaits it, so
    #: no report of the end goes out before the undo it makes (and its note) is done
    ending: asyncio.Future[None] | None = field(default=None, repr=False)
    #: the executor turn that started it, and when (wall clock) it started and ended
    turn: int = 0
    started_at: float = field(default_factory=time.time)
    ended_at: float | None = None
    _cleaned: list[Sequence[str] | None] | None = field(default=None, repr=False)
    _clean_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def clean_once(self) -> Sequence[str] | None:
        """Run :attr:`cleanup` the first time only (a stop before a rewind and the watcher
        that notices the end both call it); later calls return the first one's answer."""
        with self._clean_lock:
            if self._cleaned is None:
                self._cleaned = [self.cleanup()]
            return self._cleaned[0]

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def keep_file(self) -> Path:
        return self.log.with_name(self.log.name + ".keep")

    @property
    def kept(self) -> bool:
        return self.keep_file.exists()

    def runtime(self) -> float:
        return (self.ended if self.ended is not None else time.monotonic()) - self.began

    def info(self) -> JobInfo:
        return JobInfo(
            self.id,
            self.command,
            self.status,
            self.pid,
            self.runtime(),
            self.exit_code,
            self.kept,
            str(self.log),
            self.turn,
            self.started_at,
            self.ended_at,
        )


class JobTable:
    """The background jobs of one session; see the module docstring.

    ``folder`` holds the logs (created private, 0700); ``max_running`` bounds the jobs running
    at once; ``keep_on_exit`` keeps every job when the session closes; ``output_limit`` bounds
    what one read returns (characters, head and tail); ``sink`` receives
    :class:`JobStarted` / :class:`JobEnded`.
    """

    def __init__(
        self,
        folder: Path,
        *,
        max_running: int = 8,
        keep_on_exit: bool = False,
        output_limit: int = 30_000,
        kill_grace: float = 2.0,
        sink: Sink | None = None,
        role: str = "executor",
        guard_records: Path | None = None,
    ) -> None:
        self.folder = folder
        #: where the guards of this table's jobs keep the record another session reads
        #: (:func:`reasonix.safety.plants.running_plants`); None: no record
        self.guard_records = guard_records
        self.max_running = max_running
        self.keep_on_exit = keep_on_exit
        self.output_limit = max(output_limit, 2)
        self.kill_grace = kill_grace
        self.sink: Sink = sink or NullSink()
        self.role = role
        self.max_log_bytes = MAX_LOG_BYTES
        self._jobs: dict[str, Job] = {}
        self._count = 0

    # -- reading ----------------------------------------------------------------------------------

    def snapshot(self) -> list[JobInfo]:
        """Every job of this session, oldest first."""
        return [job.info() for job in self._jobs.values()]

    def running(self) -> list[JobInfo]:
        """The jobs still running, oldest first."""
        return [job.info() for job in self._jobs.values() if job.status == "running"]

    def get(self, job_id: str) -> Job:
        """The job ``job_id``; JobError naming the known ids when there is none."""
        job = self._jobs.get(job_id.strip())
        if job is None:
            known = ", ".join(self._jobs) or "none started yet"
            raise JobError(f"no background job {job_id!r} in this session (jobs: {known})")
        return job

    # -- starting ---------------------------------------------------------------------------------

    def start(
        self,
        argv: Sequence[str],
        *,
        command: str,
        cwd: Path,
        env: Mapping[str, str],
        cleanup: Callable[[], Sequence[str] | None] = lambda: None,
        over_bound: Callable[[int], bool] | None = None,
        turn: int = 0,
    ) -> Job:
        """Start ``argv`` (the confined command line) as a job. ``cleanup`` kills what escaped
        the job's process group (``bash``'s marker search) and releases its process bound;
        ``over_bound`` (told the job's pid) says when the job started too many processes, which
        stops it; ``turn`` is the executor turn starting it. Raises JobError over the bound of
        jobs."""
        if len(self.running()) >= self.max_running:
            raise JobError(
                f"{self.max_running} background jobs are running already ([jobs] max_running); "
                "stop one with the job tool (action kill) first"
            )
        self._count += 1
        job_id = f"job-{self._count}"
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        supervisor = self.folder / "supervise.py"
        if not supervisor.exists():
            supervisor.write_text(JOB_SUPERVISOR)
        log = self.folder / f"{job_id}.log"
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_TRUNC, 0o600)
        keep = log.with_name(log.name + ".keep")
        keep.unlink(missing_ok=True)
        if self.keep_on_exit:
            keep.touch(mode=0o600)
        try:
            # From the event loop's thread, which lives as long as the agent: the kernel's
            # notice (PR_SET_PDEATHSIG) follows the thread that started the supervisor.
            process = subprocess.Popen(
                [sys.executable, "-I", "-S", str(supervisor), str(os.getpid()), str(keep), *argv],
                cwd=cwd,
                env=dict(env),
                stdin=subprocess.DEVNULL,
                stdout=fd,
                stderr=fd,
                start_new_session=True,
            )
        except OSError as exc:
            raise JobError(f"the job could not start: {exc}") from exc
        finally:
            os.close(fd)
        job = Job(job_id, command, process, log, time.monotonic(), cleanup, over_bound, turn=turn)
        self._jobs[job_id] = job
        job.watcher = asyncio.get_running_loop().create_task(
            self._watch(job), name=f"reasonix-{job_id}"
        )
        self.sink.emit(JobStarted(self.role, job_id, command, job.pid))
        return job

    async def _watch(self, job: Job) -> None:
        """Notice the job's end (polling: no thread is left waiting on a kept job at exit),
        then stop what it left behind in its group."""
        while job.process.poll() is None:
            await asyncio.sleep(_WATCH_STEP)
            if job.over_bound is not None and await asyncio.to_thread(job.over_bound, job.pid):
                job.note = "stopped: the job started more processes than [sandbox] max_processes"
                await self.kill(job.id)
                return
            size = _size(job.log)
            if size > self.max_log_bytes:
                # The job appends (O_APPEND), so its next write lands at the new end.
                os.truncate(job.log, 0)
                job.dropped += max(0, size - job.offset)
                job.offset = 0
        await self._ended(job, "exited")

    async def _ended(self, job: Job, status: JobStatus) -> None:
        """Record the job's end and wait for its clean-up; the first caller starts it, any
        other (the watcher, a read, a kill, the close) waits for that same one. The clean-up
        goes on when a caller is cancelled (it undoes plants)."""
        if job.ending is None:
            job.ended = time.monotonic()
            if job.ended_at is None:
                job.ended_at = time.time()
            job.status = "killed" if job.status == "killed" else status
            code = job.process.returncode
            job.exit_code = code if code is None or code >= 0 else 128 - code
            _signal_group(job.pid, signal.SIGKILL)
            job.ending = asyncio.ensure_future(self._clean_up(job))
        await asyncio.shield(job.ending)

    async def _clean_up(self, job: Job) -> None:
        undone = await asyncio.to_thread(job.clean_once)
        if undone:
            note = (
                f"reasonix undid what the job did to {', '.join(undone)}: what makes code run "
                "later outside the sandbox is protected (change it with the file tools, which ask)"
            )
            job.note = f"{job.note}; {note}" if job.note else note
        self.sink.emit(JobEnded(self.role, job.id, job.status, job.exit_code))

    # -- output -----------------------------------------------------------------------------------

    async def read(self, job_id: str, *, pattern: str | None = None, wait: float = 0.0) -> str:
        """New output of ``job_id`` since the last read (see the module docstring), after
        waiting up to ``wait`` seconds for some to arrive. Raises JobError."""
        job = self.get(job_id)
        matcher = None
        if pattern:
            try:
                matcher = re.compile(pattern)
            except re.error as exc:
                raise JobError(
                    f"filter {pattern!r} is not a valid regular expression: {exc}"
                ) from None
        deadline = time.monotonic() + max(0.0, wait)
        while job.status == "running" and _size(job.log) <= job.offset:
            if time.monotonic() >= deadline:
                break
            await asyncio.sleep(_WAIT_STEP)
        if job.process.poll() is not None:  # ended: its report waits for the clean-up
            await self._ended(job, "exited")
        text = await asyncio.to_thread(self._take, job, matcher is not None)
        if matcher is not None:
            kept = [line for line in text.splitlines() if matcher.search(line)]
            text = "\n".join(kept)
        if job.dropped:
            text = (
                f"[... {job.dropped:,} bytes dropped unread: the log passed its bound ...]\n{text}"
            )
            job.dropped = 0
        return _report(job, text)

    def _take(self, job: Job, whole_lines: bool) -> str:
        """Read the log from the last offset, bounded; with ``whole_lines`` a running job's
        unfinished last line stays for the next read (a filter needs whole lines)."""
        size = _size(job.log)
        start = job.offset
        if size <= start:
            return ""
        with open(job.log, "rb") as f:
            if size - start <= self.output_limit:
                f.seek(start)
                data = f.read(size - start)
                if whole_lines and job.status == "running" and not data.endswith(b"\n"):
                    cut = data.rfind(b"\n")
                    data = data[: cut + 1] if cut >= 0 else b""
                job.offset = start + len(data)
                return _clean(data)
            half = self.output_limit // 2
            f.seek(start)
            head = f.read(half)
            f.seek(size - half)
            tail = f.read(half)
        job.offset = size
        skipped = size - start - len(head) - len(tail)
        return _clean(head) + f"\n[... {skipped:,} bytes of output skipped ...]\n" + _clean(tail)

    # -- stopping ---------------------------------------------------------------------------------

    async def kill(self, job_id: str) -> JobInfo:
        """Stop ``job_id`` and everything it started (SIGTERM, then SIGKILL after the grace).
        Raises JobError for an unknown id."""
        job = self.get(job_id)
        if job.process.poll() is not None:
            await self._ended(job, "exited")
        if job.status == "running":
            job.status = "killed"
            _signal_group(job.pid, signal.SIGTERM)
            deadline = time.monotonic() + self.kill_grace
            while job.process.poll() is None and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            _signal_group(job.pid, signal.SIGKILL)
            await asyncio.to_thread(job.process.wait)
            await self._ended(job, "killed")
        if job.watcher is not None and job.watcher is not asyncio.current_task():
            job.watcher.cancel()
        return job.info()

    def stop_now(self, job_ids: Sequence[str]) -> list[JobInfo]:
        """Stop the running ``job_ids`` at once and wait for their processes to be gone (a
        rewind of the turn that started them does this first, so nothing of theirs writes after
        it): SIGKILL to each group, then the clean-up (what escaped the group, the undo of
        plants). Synchronous: the watcher reports each end as usual. Returns the ones stopped."""
        stopped = []
        for job_id in job_ids:
            job = self.get(job_id)
            if job.status != "running":
                continue
            if job.process.poll() is None:
                job.status = "killed"
            _signal_group(job.pid, signal.SIGKILL)
            job.process.wait()
            if job.ended_at is None:
                job.ended_at = time.time()
            job.clean_once()
            stopped.append(job.info())
        return stopped

    def keep(self, job_id: str) -> JobInfo:
        """Keep ``job_id`` running after the session ends (``/jobs keep``). Raises JobError."""
        job = self.get(job_id)
        if job.status != "running":
            raise JobError(f"{job.id} is not running ({job.status})")
        job.keep_file.touch(mode=0o600)
        return job.info()

    async def close(self) -> list[JobInfo]:
        """Stop every running job that is not kept; returns the kept ones still running. No
        events come of it: the frontend has said what was running (a headless result's last
        line stays its last)."""
        self.sink = NullSink()
        kept = []
        for job in list(self._jobs.values()):
            if job.status == "running" and job.kept:
                kept.append(job.info())
            else:
                await self.kill(job.id)
            if job.watcher is not None:
                job.watcher.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await job.watcher
        return kept


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _clean(data: bytes) -> str:
    return strip_escape_sequences(data.decode("utf-8", "replace"))


def _report(job: Job, text: str) -> str:
    state = f"{job.status}, {job.runtime():.0f} s"
    if job.exit_code is not None:
        state += f", exit code {job.exit_code}"
    body = text.rstrip("\n") if text.strip() else "(no new output)"
    if job.note:
        body += f"\n[{job.note}]"
    return f"[{job.id}: {state}]\n{body}"


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


# ---------------------------------------------------------------------------------------------
# Tools


class _JobTools:
    def __init__(self, table: JobTable) -> None:
        self.table = table

    async def bash_output(
        self,
        job_id: Annotated[str, "id bash returned (job-1)"],
        filter: Annotated[str | None, "regex: only matching lines"] = None,
        wait: Annotated[float | None, "seconds to wait for new output (max 60)"] = None,
    ) -> ToolResult:
        """New output of a background job since the last read, with its status and exit
        code."""
        try:
            text = await self.table.read(job_id, pattern=filter, wait=min(wait or 0.0, 60.0))
        except JobError as exc:
            return ToolResult.error(str(exc))
        return ToolResult(text)

    async def kill_shell(self, job_id: Annotated[str, "id bash returned (job-1)"]) -> ToolResult:
        """Stop a background job this session started, with every process it started."""
        try:
            info = await self.table.kill(job_id)
        except JobError as exc:
            return ToolResult.error(str(exc))
        if info.exit_code is not None and info.status == "exited":
            return ToolResult(f"{info.id} had already exited (exit code {info.exit_code}).")
        return ToolResult(f"Stopped {info.id} and its processes.")


def job_tools(table: JobTable) -> list[Tool]:
    """``job`` over ``table``: read a background job's new output (``bash_output``) or stop it
    (``kill_shell``). It touches only the jobs this session started (host state, like the todo
    tools), so it asks for no approval; it is given to the executor only."""
    from reasonix.tools.builtin.files import builtin_tool

    tools = _JobTools(table)

    async def job(
        id: Annotated[str, "job id from bash (job-1)"],
        action: Annotated[Literal["output", "kill"], "output: new output since last read"] = (
            "output"
        ),
        filter: Annotated[str | None, "regex: only matching lines"] = None,
        wait: Annotated[float | None, "seconds to wait for output (max 60)"] = None,
    ) -> ToolResult:
        """A background job's new output with its status, or kill: stop it and its
        processes."""
        if action == "kill":
            return await tools.kill_shell(id)
        return await tools.bash_output(id, filter=filter, wait=wait)

    # read_only here means "asks no approval": stopping our own job undoes our own start.
    return [
        builtin_tool(
            job, name="job", read_only=True, category="jobs", kind="execute", subjects=("id",)
        )
    ]
