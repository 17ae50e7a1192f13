"""The ``bash`` tool: a shell command in the workspace, with a timeout and capped output.

- Each call starts a fresh ``bash -c`` in the workspace root (``cd`` does not carry over), with
  stdin closed, in its own process group. On timeout the whole group is stopped (SIGTERM, then
  SIGKILL), so children and grandchildren go too; processes a command leaves running in the
  background are stopped when it ends. A process that left the group (``setsid``, a daemon) is
  found on Linux by a marker variable in its environment and killed too; one that also cleared
  its environment (``setsid env -i ...``), or any on a system without ``/proc``, can outlive the
  command: a residual risk that ``isolation="bwrap"`` (its own PID namespace) removes.
- Output (stdout and stderr together) keeps its head and tail within ``output_limit``.
- The environment is built from an allowlist (:mod:`reasonix.safety.environment`) plus the
  user's ``pass_env`` patterns, never with configured names (``secret_env``) or any name
  matching ``*API_KEY``, ``*_TOKEN``, ``*_SECRET``, ``*_SECRET_*``, ``*PASSWORD*`` or
  ``*_CREDENTIALS``. Pagers and git prompts are switched off so nothing waits for a terminal.
- Confinement comes from a :class:`~reasonix.safety.confinement.Confiner` (``confiner``): with
  :class:`~reasonix.safety.confinement.BwrapConfiner` the command runs under bubblewrap (the
  workspace roots writable, system folders read-only, an empty home, no network, its own PID
  namespace, bounded processes and memory). ``isolation="bwrap"`` is the short form that asks
  for it with the defaults; without ``bwrap`` on ``PATH`` the tool then refuses to run rather
  than run unconfined. The default is no confinement; the application chooses from the user's
  ``[sandbox]`` settings (:func:`reasonix.safety.confinement.confinement_for`). Commands in
  front share one kept sandbox (:mod:`reasonix.safety.session_sandbox`), which finds each
  command the sandbox as a fresh one would be; ``kept_sandbox=False`` or
  ``REASONIX_SANDBOX=per-call`` starts one per command, as background jobs always do.
- Every command that is not plainly read-only is preceded by a snapshot of the workspace in our
  private store (see :meth:`reasonix.safety.checkpoints.CheckpointManager.before_command`).
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import hashlib
import os
import secrets
import shutil
import signal
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal

from reasonix.safety.checkpoints import CHECKPOINTS_KEY, CheckpointManager
from reasonix.safety.confinement import (
    BwrapConfiner,
    ConfinementError,
    Confiner,
    NoConfiner,
    PidsCgroup,
    UnavailableConfiner,
    first_child,
    sandbox_process_count,
    watch_processes,
    watchdog_bound,
)
from reasonix.safety.environment import build_environment
from reasonix.safety.plants import CreationGuard
from reasonix.safety.session_sandbox import SandboxUnavailable, SessionSandbox, per_call_forced
from reasonix.tools.builtin.files import builtin_tool
from reasonix.tools.builtin.jobs import JobError, JobTable
from reasonix.tools.builtin.shell_output import CappedOutput, pump
from reasonix.tools.builtin.shell_process import MARKER_ENV, kill_marked, signal_group, stop_group
from reasonix.tools.registry import Effect, Tool, ToolContext, ToolResult

SECRET_ENV_PATTERNS: tuple[str, ...] = (
    "*API_KEY",
    "*_TOKEN",
    "*_SECRET",
    "*_SECRET_*",
    "*PASSWORD*",
    "*_CREDENTIALS",
)

# Quiet defaults so a command never stops to wait for a pager or a password prompt.
_QUIET_ENV = {
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_EDITOR": "true",
    "NO_COLOR": "1",
}


@dataclass(frozen=True)
class ShellOptions:
    """How ``bash`` runs commands. ``timeout`` is the default per call, ``max_timeout`` the most
    a call may ask for; ``output_limit`` is in characters."""

    timeout: float = 120.0
    max_timeout: float = 600.0
    output_limit: int = 30_000
    secret_env: Sequence[str] = ()
    isolation: Literal["none", "bwrap"] = "none"
    #: overrides ``isolation`` when given
    confiner: Confiner | None = None
    shell: str = "bash"
    env: Mapping[str, str] = field(default_factory=dict)
    #: variables passed through besides the allowlist (the user's ``[environment] include``)
    pass_env: Sequence[str] = ()
    #: how long to wait after SIGTERM before SIGKILL
    kill_grace: float = 2.0
    #: confined commands share one kept sandbox (:mod:`reasonix.safety.session_sandbox`);
    #: False, or ``REASONIX_SANDBOX=per-call``, starts a fresh one per command
    kept_sandbox: bool = True


@dataclass(frozen=True)
class CommandRun:
    """What one command did: its output (capped, escape sequences removed), exit code, whether
    it ran out of time or past the process bound, and the protected paths it created that were
    undone."""

    output: str
    code: int
    timed_out: bool = False
    over_limit: bool = False
    undone: tuple[str, ...] = ()


def is_secret_env(name: str, extra: Sequence[str] = ()) -> bool:
    """Whether an environment variable must not reach commands the model runs."""
    upper = name.upper()
    if upper in {e.upper() for e in extra}:
        return True
    return any(fnmatch.fnmatchcase(upper, p) for p in SECRET_ENV_PATTERNS)


def command_env(options: ShellOptions, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment a command runs with: the allowlist of
    :func:`reasonix.safety.environment.build_environment` plus ``pass_env``, never a name in
    ``secret_env`` nor one named like a secret, then the quiet defaults and ``env``."""
    env = build_environment(include=options.pass_env, withheld=options.secret_env, base=base)
    env = {k: v for k, v in env.items() if not is_secret_env(k, options.secret_env)}
    env.update(_QUIET_ENV)
    env.update(options.env)
    return env


def bwrap_argv(roots: Sequence[Path], workdir: Path, inner: Sequence[str]) -> list[str]:
    """The bubblewrap command line with the default confinement (see
    :class:`~reasonix.safety.confinement.BwrapConfiner`)."""
    confiner = BwrapConfiner("bwrap", home=Path(os.path.realpath(Path.home())))
    return confiner.wrap(inner, workspace=workdir, roots=roots)


def options_confiner(options: ShellOptions) -> Confiner:
    """The confiner ``options`` ask for."""
    if options.confiner is not None:
        return options.confiner
    if options.isolation == "bwrap":
        found = shutil.which("bwrap")
        if found is None:
            return UnavailableConfiner(
                "isolation is set to bwrap but bubblewrap (bwrap) is not installed; install "
                "it (e.g. apt install bubblewrap) or set the shell isolation to none."
            )
        return BwrapConfiner(found, home=Path(os.path.realpath(Path.home())))
    return NoConfiner()


class ShellTool:
    """``bash`` bound to a workspace (and its extra roots, for bubblewrap)."""

    def __init__(
        self,
        workspace: Path,
        *,
        roots: Sequence[Path] = (),
        options: ShellOptions | None = None,
        checkpoints: CheckpointManager | None = None,
        jobs: JobTable | None = None,
    ) -> None:
        self.workspace = Path(os.path.realpath(workspace))
        self.roots = tuple(roots) or (self.workspace,)
        self.options = options or ShellOptions()
        self.checkpoints = checkpoints
        self.confiner = options_confiner(self.options)
        #: where ``run_in_background`` commands go; None: the parameter is refused
        self.jobs = jobs
        self._kept: SessionSandbox | None = None

    def kept_sandbox(self) -> SessionSandbox | None:
        """The sandbox front commands share, when they are confined by bubblewrap and kept
        sandboxes are not switched off; None otherwise."""
        confiner = self.confiner
        if not isinstance(confiner, BwrapConfiner) or not self.options.kept_sandbox:
            return None
        if per_call_forced():
            return None
        if self._kept is None:
            self._kept = SessionSandbox(confiner, self.workspace, self.roots)
        return self._kept

    def close(self) -> None:
        """End the kept sandbox, if one runs."""
        if self._kept is not None:
            self._kept.close()

    def _inner(self, command: str) -> list[str]:
        shell = shutil.which(self.options.shell) or shutil.which("sh") or "/bin/sh"
        return [shell, "-c", command]

    def _argv(self, command: str) -> list[str] | str:
        inner = self._inner(command)
        try:
            return self.confiner.wrap(inner, workspace=self.workspace, roots=self.roots)
        except ConfinementError as exc:
            return str(exc)

    async def bash(
        self,
        ctx: ToolContext,
        command: Annotated[str, "shell command"],
        timeout: Annotated[float | None, "seconds (default 120, max 600)"] = None,
        run_in_background: Annotated[bool, "start as a job; returns its id at once"] = False,
    ) -> ToolResult:
        """Run a command in a fresh bash shell at the workspace root: output, then [exit
        code N] unless 0. Background processes stop when it ends; servers and watchers:
        run_in_background, then the job tool."""
        opts = self.options
        limit = min(timeout or opts.timeout, opts.max_timeout)
        if run_in_background and self.jobs is None:
            return ToolResult.error("background jobs are not available here; run it in front")
        # The kept sandbox makes its own arguments: a per-call command line only when needed.
        argv = None if not run_in_background and self.kept_sandbox() else self._argv(command)
        if isinstance(argv, str):
            return ToolResult.error(argv)
        manager = CHECKPOINTS_KEY.get(ctx.state) or self.checkpoints
        if manager is not None:
            await asyncio.to_thread(manager.before_command, ctx, command)
        if run_in_background and self.jobs is not None and argv is not None:
            pids = self._pids_cgroup()
            if pids is not None:
                argv = pids.wrap(argv)
            env, marker = self._environment()
            # What the job creates among the protected paths is undone when it ends.
            guard = (
                CreationGuard.start(self.roots, lasting=True, record_dir=self.jobs.guard_records)
                if isinstance(self.confiner, BwrapConfiner)
                else None
            )
            return self._start_job(self.jobs, argv, command, env, marker, pids, guard, ctx.turn)
        run = await self._execute(argv, limit, self._inner(command))
        text = run.output
        shown = text if text else "(no output)"
        if run.undone:
            shown += (
                f"\n[reasonix undid what the command did to {', '.join(run.undone)}: inside the "
                "sandbox, reasonix's own configuration and the repository's git configuration "
                "and hooks are read-only (change them with the file tools, which ask)]"
            )
        if run.over_limit:
            bound = self.confiner.max_processes if isinstance(self.confiner, BwrapConfiner) else 0
            shown += f"\n[stopped: the command started more than {bound} processes]"
        if run.timed_out:
            shown += f"\n[timed out after {limit:g} s; the command and its children were killed]"
            outcome = f"timeout\n{text}"
        else:
            shown += f"\n[exit code {run.code}]" if run.code else ""  # none on success
            outcome = f"{run.code}\n{text}"
        effect = Effect(
            "command",
            command,
            hashlib.sha256(outcome.encode()).hexdigest()[:16],
            ok=not run.timed_out and run.code == 0,
        )
        return ToolResult(shown, is_error=run.timed_out, effects=(effect,))

    async def run_command(self, command: str, timeout: float | None = None) -> CommandRun:
        """Run ``command`` exactly as :meth:`bash` runs one in front (the same confiner,
        environment, process bound, clean-up and undo of protected files), without a snapshot
        or a tool result: for the application's own runs of commands it did not write, such as
        a batch task's ``setup`` and ``verify``. Raises :class:`ConfinementError` when the
        command cannot be confined as configured."""
        inner = self._inner(command)
        limit = min(timeout or self.options.timeout, self.options.max_timeout)
        return await self._execute(None, limit, inner)

    def _environment(self) -> tuple[dict[str, str], str]:
        """A command's environment and the marker in it that finds its strays."""
        marker = f"{os.getpid()}-{secrets.token_hex(8)}"
        env = command_env(self.options)
        env[MARKER_ENV] = marker
        return env, marker

    async def _execute(self, argv: list[str] | None, limit: float, inner: list[str]) -> CommandRun:
        """Run ``inner`` in the kept sandbox, else as ``argv`` (made from ``inner`` when None)."""
        kept = self.kept_sandbox()
        if kept is not None:
            run = await self._execute_kept(kept, inner, limit)
            if run is not None:
                return run
        if argv is None:
            argv = self.confiner.wrap(inner, workspace=self.workspace, roots=self.roots)
        opts = self.options
        pids = self._pids_cgroup()
        if pids is not None:
            argv = pids.wrap(argv)
        # A long command's plant is not obeyed by another session meanwhile either (the record).
        records = self.jobs.guard_records if self.jobs is not None else None
        guard = (
            CreationGuard.start(self.roots, record_dir=records)
            if isinstance(self.confiner, BwrapConfiner)
            else None
        )
        output = CappedOutput(opts.output_limit)
        env, marker = self._environment()
        # Our own pipe rather than asyncio's: asyncio's wait() also waits for its pipes to close,
        # which a background process holding stdout would delay until the timeout.
        read_fd, write_fd = os.pipe()
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                cwd=self.workspace,
                env=env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=write_fd,
                stderr=write_fd,
                start_new_session=True,
            )
        except BaseException:
            os.close(read_fd)
            if pids is not None:
                pids.close()
            raise
        finally:
            os.close(write_fd)
        reader = asyncio.create_task(pump(read_fd, output))
        timed_out = False
        watchdog = self._watchdog(proc)
        try:
            try:
                await asyncio.wait_for(proc.wait(), limit)
            except TimeoutError:
                timed_out = True
                await stop_group(proc, opts.kill_grace)
        finally:
            over_limit = False
            if watchdog is not None:
                watchdog.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    over_limit = await watchdog
            # Whatever happened (done, timed out, cancelled), nothing of this command outlives it.
            if proc.returncode is None:
                await stop_group(proc, opts.kill_grace)
            signal_group(proc.pid, signal.SIGKILL)
            await asyncio.to_thread(kill_marked, marker)
            if pids is not None:
                over_limit = over_limit or pids.hit_bound()
                await asyncio.to_thread(pids.close)
            # Every process of the call is gone: nothing can re-create what this undoes.
            undone = guard.finish() if guard is not None else []
            try:
                await asyncio.wait_for(asyncio.shield(reader), 2.0)
            except TimeoutError:  # a process that left our group still holds the pipe
                reader.cancel()
        code = proc.returncode if proc.returncode is not None else -1
        return CommandRun(output.text().rstrip("\n"), code, timed_out, over_limit, tuple(undone))

    async def _execute_kept(
        self, kept: SessionSandbox, inner: list[str], limit: float
    ) -> CommandRun | None:
        """:meth:`_execute` in the kept sandbox; None when it cannot be had (the caller runs
        the command in a sandbox of its own)."""
        assert isinstance(self.confiner, BwrapConfiner)
        records = self.jobs.guard_records if self.jobs is not None else None
        guard = CreationGuard.start(self.roots, record_dir=records)
        output = CappedOutput(self.options.output_limit)
        env, _marker = self._environment()
        read_fd, write_fd = os.pipe()
        reader = asyncio.create_task(pump(read_fd, output))
        try:
            run = await kept.run(inner, env, write_fd, limit=limit, grace=self.options.kill_grace)
        except SandboxUnavailable:
            run = None
        finally:
            # Every process of the call is gone (or the call never started): nothing can
            # re-create what this undoes.
            undone = guard.finish()
            try:
                await asyncio.wait_for(asyncio.shield(reader), 2.0)
            except TimeoutError:
                reader.cancel()
        if run is None:
            return None
        text = output.text().rstrip("\n")
        return CommandRun(text, run.code, run.timed_out, run.over_limit, tuple(undone))

    def _pids_cgroup(self) -> PidsCgroup | None:
        """The kernel's process bound for a confined command, where cgroups allow it."""
        confiner = self.confiner
        if not isinstance(confiner, BwrapConfiner):
            return None
        return PidsCgroup.create(confiner.max_processes)

    def _start_job(
        self,
        jobs: JobTable,
        argv: list[str],
        command: str,
        env: dict[str, str],
        marker: str,
        pids: PidsCgroup | None,
        guard: CreationGuard | None = None,
        turn: int = 0,
    ) -> ToolResult:
        """``run_in_background``: the same command line (its process bound included) and
        environment as in front, as a job (see :mod:`reasonix.tools.builtin.jobs`); what it
        created among the protected paths is undone when it ends (``guard``). ``turn``: the
        executor turn starting it (a rewind of that turn stops it first)."""

        def cleanup() -> list[str]:
            kill_marked(marker)
            if pids is not None:
                pids.close()
            # Every process of the job is gone: nothing can re-create what this undoes.
            return guard.finish() if guard is not None else []

        try:
            job = jobs.start(
                argv,
                command=command,
                cwd=self.workspace,
                env=env,
                cleanup=cleanup,
                over_bound=self._job_watchdog(),
                turn=turn,
            )
        except JobError as exc:
            if pids is not None:
                pids.close()
            if guard is not None:
                guard.finish()
            return ToolResult.error(str(exc))
        if guard is not None:
            guard.started(job.pid)
        text = (
            f"Started background job {job.id}; it stops when the session ends. Its output: "
            f'more_tools(name="job", arguments={{"id": "{job.id}"}}) (add "wait": seconds); '
            f'stop it with "action": "kill".'
        )
        # A start is progress, not a run of the command: its exit code is not known yet, so
        # it must not pass for the verification of a step or a goal (a "command" would).
        effect = Effect("job", command, f"job:{job.id}")
        return ToolResult(text, effects=(effect,))

    def _job_watchdog(self) -> Callable[[int], bool] | None:
        """The root agent's process watchdog (see :meth:`_watchdog`) for a job: told the job's
        supervisor pid, whether the sandbox under it holds more than the bound."""
        bound = watchdog_bound(self.confiner)
        if not bound:
            return None

        def over(supervisor: int) -> bool:
            child = first_child(supervisor)
            return child is not None and sandbox_process_count(child) > bound

        return over

    def _watchdog(self, proc: asyncio.subprocess.Process) -> asyncio.Task[bool] | None:
        """For an agent running as root (whom ``RLIMIT_NPROC`` does not bound): a task that
        stops the sandbox once its PID namespace holds more than the process bound. It returns
        whether it had to."""
        bound = watchdog_bound(self.confiner)
        if not bound:
            return None
        watch = watch_processes(
            proc.pid,
            bound,
            lambda: proc.returncode is None,
            lambda: signal_group(proc.pid, signal.SIGKILL),
        )
        return asyncio.create_task(watch)

    def tool(self) -> Tool:
        """``bash`` as a registry tool; its own timeout governs, so the registry's is above it."""
        return builtin_tool(
            self.bash,
            name="bash",
            destructive=True,
            category="bash",
            kind="execute",
            aliases=("Bash",),
            subjects=("command",),
            timeout=self.options.max_timeout + 30,
            close=self.close,
        )
