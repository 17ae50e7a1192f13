"""One bubblewrap sandbox kept for a session's commands, with a small supervisor inside.

Starting a sandbox costs tens of milliseconds, most of a step's host time. A
:class:`SessionSandbox` starts one (the same
:meth:`~reasonix.safety.confinement.BwrapConfiner.arguments` a per-call sandbox gets) running
the Python :data:`SUPERVISOR` as the PID namespace's init (``--as-pid-1``), and sends it each
command over a Unix socket with the write end of the command's output pipe. The supervisor
starts the command in its own session and process group with the environment sent, the bounds
of :meth:`~reasonix.safety.confinement.BwrapConfiner.rlimits` (set by itself, where a per-call
sandbox has a shell run ``ulimit``) and default signal handling, forwards a stop signal, and
when the command ends kills and reaps every other process of the namespace (``kill(-1)``,
``setsid`` daemons included), answers, and then (the next command waits for it, this one's
result does not) empties ``/tmp``, ``/dev``, ``/dev/shm`` and the home folder back to what they
held at start. It reports the sandbox unclean when that fails, when something there at start
changed (``/dev/fd`` replaced), when System V IPC objects or POSIX message queues remain, or
when what fork passes on (limits, nice value, CPU affinity, scheduling policy, I/O priority,
OOM score adjustment, core dump filter) or the user namespace's kernel keyrings changed.

As pid 1 and non-dumpable, the supervisor can be neither traced, read nor stopped by a command
(the kernel gives pid 1 only the signals it handles), and the kernel bounds (``pids`` cgroup,
``RLIMIT_NPROC``) count it where a per-call sandbox has bubblewrap's init. The host trusts none
of its answers: after every command it counts the sandbox's processes itself (the ``pids``
cgroup's count, else every process's PID namespace) and kills the sandbox (the next command
gets a fresh one) when more than the supervisor remains, or when the supervisor reports it
unclean, stops answering or dies. A sandbox is reused only while a fresh one would be the same:
the bubblewrap arguments computed anew for each command (the protected paths and secrets that
exist, the settings) and the (device, inode) of every path they name.

It runs past 500 lines because the supervisor's source (sent into the sandbox as text) and the
host side that checks it are two ends of one protocol, read and changed together.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from reasonix.safety.confinement import (
    BwrapConfiner,
    PidsCgroup,
    first_child,
    sandbox_process_count,
    watch_processes,
    watchdog_bound,
)

#: Set to ``per-call`` to start a fresh sandbox for every command (the old way), for comparison.
MODE_ENV = "REASONIX_SANDBOX"

#: What ``python -I -S -c`` runs inside the sandbox: it reads the supervisor's source from the
#: socket (a short command line for ``ps`` to show) and runs it with ``FD RESET_JSON`` as
#: arguments.
BOOTSTRAP = (
    "import socket,struct,sys;s=socket.socket(fileno=int(sys.argv[1]));"
    "n=struct.unpack('!I',s.recv(4,socket.MSG_WAITALL))[0];"
    "exec(compile(s.recv(n,socket.MSG_WAITALL),'reasonix-supervisor','exec'))"
)

#: The supervisor (see the module docstring).
SUPERVISOR = r"""
import ctypes, json, os, platform, resource, select, signal, socket, stat, struct, sys, time
LIBC = ctypes.CDLL(None, use_errno=True)
LIBC.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0: no ptrace, no /proc/PID/mem
# pid 1 of the namespace (bubblewrap --as-pid-1): the kernel gives it only the signals it
# handles, so no command can stop or kill it; Python's own SIGINT handler would be one
signal.signal(signal.SIGINT, signal.SIG_IGN)
sock = s
os.set_inheritable(sock.fileno(), False)
RESET = json.loads(sys.argv[2])
ME = os.getpid()


def attributes(path):
    # extended attributes (and so POSIX ACLs, whose default decides the modes of what the
    # next command creates): a change is a change of the entry
    try:
        names = os.listxattr(path, follow_symlinks=False)
        return tuple(sorted((n, os.getxattr(path, n, follow_symlinks=False)) for n in names))
    except OSError:
        return ()


def state(path, st):
    if stat.S_ISLNK(st.st_mode):
        return st.st_mode, os.readlink(path), attributes(path)
    if stat.S_ISREG(st.st_mode):
        return st.st_mode, (st.st_size, st.st_mtime_ns, st.st_ino), attributes(path)
    return st.st_mode, None, attributes(path)


def tree(top):
    dev = os.lstat(top).st_dev
    out = {}
    def walk(path):
        for entry in os.scandir(path):
            st = entry.stat(follow_symlinks=False)
            if st.st_dev != dev:
                continue
            out[entry.path] = state(entry.path, st)
            if stat.S_ISDIR(st.st_mode):
                walk(entry.path)
    out[top] = state(top, os.lstat(top))
    walk(top)
    return dev, out


INITIAL = {}
for top in RESET:
    try:
        INITIAL[top] = tree(top)
    except OSError:
        pass


def remove(path, dev):
    st = os.lstat(path)
    if st.st_dev != dev:
        raise OSError("a mount point appeared: " + path)
    if stat.S_ISDIR(st.st_mode):
        os.chmod(path, 0o700)
        for name in os.listdir(path):
            remove(os.path.join(path, name), dev)
        os.rmdir(path)
    else:
        os.unlink(path)


def reset():
    # What a command added goes; what was there at start must be as it was (a link, a file
    # or a folder replaced or removed: the caller discards the sandbox).
    for top, (dev, known) in INITIAL.items():
        def walk(path):
            mode = known[path][0]
            if os.lstat(path).st_mode != mode:
                os.chmod(path, stat.S_IMODE(mode))
            for entry in os.scandir(path):
                st = entry.stat(follow_symlinks=False)
                if st.st_dev != dev:
                    continue
                was = known.get(entry.path)
                if was is None:
                    remove(entry.path, dev)
                elif stat.S_ISDIR(st.st_mode) and stat.S_ISDIR(was[0]):
                    walk(entry.path)
        walk(top)
        if tree(top) != (dev, known):
            raise OSError("changed since the sandbox started: " + top)
    try:
        if os.listdir("/dev/mqueue"):
            raise OSError("a POSIX message queue is left")
    except FileNotFoundError:
        pass


# ioprio_get's number where we know it (x86-64, arm64)
IOPRIO_GET = {"x86_64": 252, "aarch64": 31}.get(platform.machine())


def limits():
    # what fork passes on to every command; one a command changed with
    # prlimit/renice/taskset/chrt/ionice --pid $PPID would reach the next command
    names = sorted(n for n in dir(resource) if n.startswith("RLIMIT_"))
    out = [resource.getrlimit(getattr(resource, n)) for n in names]
    out += [os.getpriority(os.PRIO_PROCESS, 0), sorted(os.sched_getaffinity(0))]
    out += [os.sched_getscheduler(0), os.sched_getparam(0).sched_priority]
    if IOPRIO_GET is not None:
        out.append(LIBC.syscall(IOPRIO_GET, 1, 0))  # IOPRIO_WHO_PROCESS, this process
    for name in ("oom_score_adj", "coredump_filter"):  # writable by root, the agent in CI
        try:
            with open("/proc/self/" + name) as f:
                out.append(f.read())
        except OSError:
            out.append(None)
    return out


LIMITS = limits()
KEYCTL = {"x86_64": 250, "aarch64": 219}.get(platform.machine())


def keyctl(*args):
    return -1 if KEYCTL is None else LIBC.syscall(KEYCTL, *args)


def keyrings():
    # The keyrings that outlive a command (user, user-session, persistent: the sandbox's user
    # namespace's own), as the ids each links; one a command made unreadable reads as a change.
    # A command's session keyring is its own (joined in start()).
    out = []
    for ring in (-4, -5, "persistent"):  # KEY_SPEC_USER_KEYRING, KEY_SPEC_USER_SESSION_KEYRING
        if ring == "persistent":
            ring = keyctl(22, -1, -3)  # KEYCTL_GET_PERSISTENT, our uid, into our session keyring
            if ring < 0:
                out.append(ctypes.get_errno() in (95, 38))  # not supported here: nothing held
                continue
        buf = ctypes.create_string_buffer(4096)
        size = keyctl(11, ring, buf, 4096)  # KEYCTL_READ: the ids it links
        out.append(buf.raw[: max(size, 0)] if 0 <= size <= 4096 else None)
    return out


keyctl(1, None)  # KEYCTL_JOIN_SESSION_KEYRING: a new session keyring, not the host's
KEYS = keyrings()


def others():
    return [int(n) for n in os.listdir("/proc") if n.isdigit() and int(n) not in (1, ME)]


def reap():
    # as pid 1, the supervisor inherits every orphan: a zombie stays in /proc until reaped
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass


def end_all():
    deadline = time.monotonic() + 5
    while others():
        try:
            os.kill(-1, signal.SIGKILL)
        except OSError:
            pass
        reap()
        if time.monotonic() > deadline:
            return False
        time.sleep(0.001)
    return True


def ipc_empty():
    for name in ("shm", "sem", "msg"):
        try:
            with open("/proc/sysvipc/" + name) as f:
                if len(f.read().splitlines()) > 1:
                    return False
        except OSError:
            pass
    return True


def recv_exact(n, fds):
    data = b""
    while len(data) < n:
        chunk, got, _, _ = socket.recv_fds(sock, n - len(data), 1)
        if not chunk:
            return None
        fds += got
        data += chunk
    return data


def receive():
    fds = []
    head = recv_exact(4, fds)
    if head is None:
        return None, fds
    body = recv_exact(struct.unpack("!I", head)[0], fds)
    if body is None:
        return None, fds
    return json.loads(body), fds


def send(**msg):
    sock.sendall(json.dumps(msg).encode() + b"\n")


def start(argv, env, out, limits):
    # In the child: its own session, the signal handling a shell started by bubblewrap would
    # have (Python ignores SIGPIPE and SIGXFSZ), the bounds, the output pipe, then the shell.
    pid = os.fork()
    if pid:
        return pid
    try:
        os.setsid()
        keyctl(1, None)  # a session keyring of its own, gone with the command
        for sig in range(1, signal.NSIG):
            try:
                signal.signal(sig, signal.SIG_DFL)
            except (OSError, ValueError):
                pass
        for name, value in limits:
            try:  # as the shell's ulimit: a lower hard limit stays
                resource.setrlimit(getattr(resource, name), (value, value))
            except (OSError, ValueError):
                pass
        os.dup2(os.open("/dev/null", os.O_RDONLY), 0)
        os.dup2(out, 1)
        os.dup2(out, 2)
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))
        os.execve(argv[0], argv, env)
    except BaseException as exc:
        try:
            os.write(2, ("reasonix: cannot start the shell: %s\n" % exc).encode())
        finally:
            os._exit(127)


def run(msg, fds):
    try:
        pid = start(msg["argv"], msg["env"], fds[0], msg.get("limits", ()))
    except OSError as exc:  # no fork (the process bound): the command did not start
        os.write(fds[0], ("reasonix: cannot start the shell: %s\n" % exc).encode())
        return 127
    finally:
        for fd in fds:
            os.close(fd)
    pidfd = os.pidfd_open(pid)
    try:
        while True:
            ready, _, _ = select.select([sock, pidfd], [], [])
            if pidfd in ready:
                break
            ctl, extra = receive()
            for fd in extra:
                os.close(fd)
            if ctl is None:
                os.killpg(pid, signal.SIGKILL)
                sys.exit(0)
            try:
                os.killpg(pid, ctl["signal"])
            except OSError:
                pass
    finally:
        os.close(pidfd)
    status = os.waitpid(pid, 0)[1]
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code


send(op="ready")
while True:
    msg, fds = receive()
    if msg is None:
        break
    code = run(msg, fds) if msg.get("argv") and fds else 126
    clean = end_all()
    send(op="exit", code=code, clean=clean)
    # The host waits for this before its next command, not for this one's result.
    try:
        reset()
    except OSError:
        clean = False
    clean = clean and ipc_empty() and limits() == LIMITS and keyrings() == KEYS
    send(op="reset", clean=clean)
"""


class SandboxUnavailable(Exception):
    """The supervised sandbox could not be started (or is busy): run the command per call."""


@dataclass(frozen=True)
class SupervisedRun:
    """How a command in a kept sandbox ended: its exit code (128 + the signal when one killed
    it, as bubblewrap reports), whether it ran out of time or went past the process bound. (A
    command that left processes or a silent supervisor has its sandbox killed, as a per-call
    sandbox ends with its command; a reset that fails is found before the next command, which
    then gets a fresh sandbox.)"""

    code: int
    timed_out: bool = False
    over_limit: bool = False


def per_call_forced(environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``REASONIX_SANDBOX=per-call`` asks for a fresh sandbox per command."""
    env = os.environ if environ is None else environ
    return env.get(MODE_ENV, "").strip().lower() in ("per-call", "percall", "call")


def _visible(path: str, args: Sequence[str]) -> bool:
    """Whether ``path`` is inside something the sandbox arguments bind."""
    binds = (args[i + 2] for i, arg in enumerate(args[:-2]) if arg in ("--ro-bind", "--bind"))
    return any(Path(path).is_relative_to(dest) for dest in binds)


def _fingerprint(args: Sequence[str]) -> tuple[tuple[str, int, int], ...]:
    """The identity of every path the arguments name: a mount in a kept sandbox holds on to
    the file it was made from, so a path replaced since calls for a fresh sandbox."""
    out = []
    for arg in dict.fromkeys(a for a in args if a.startswith("/")):
        try:
            st = os.lstat(arg)
        except OSError:
            out.append((arg, -1, -1))
        else:
            out.append((arg, st.st_dev, st.st_ino))
    return tuple(out)


class _Box:
    """One running sandbox: the bubblewrap process, the host's end of the socket, its key."""

    def __init__(
        self,
        proc: subprocess.Popen[bytes],
        sock: socket.socket,
        args: tuple[str, ...],
        pids: PidsCgroup | None,
    ) -> None:
        self.proc = proc
        self.sock = sock
        self.args = args
        self.pids = pids
        #: its paths' identities, taken once bubblewrap made its mount points (_box_for)
        self.fingerprint: tuple[tuple[str, int, int], ...] = ()
        self.refusals = pids.refusals() if pids is not None else 0
        #: the processes its cgroup holds between commands (bubblewrap and the supervisor, its init)
        self.idle = -1
        #: the supervisor still owes the report of its reset after the last command
        self.resetting = False
        self.buffer = b""

    def alive(self) -> bool:
        return self.proc.poll() is None

    def terminate(self) -> None:
        """SIGKILL the sandbox: its init dies, and with it the whole PID namespace."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)

    def kill(self) -> None:
        """End the sandbox and wait until its PID namespace is gone: the outer bubblewrap is
        our child, but the namespace's init (its child, in a session of its own) dies only
        after it, so it is killed too and waited for through a pidfd (readable once it and,
        with it, every process of the namespace have exited)."""
        init = None
        child = first_child(self.proc.pid)
        with contextlib.suppress(OSError):
            init = None if child is None else os.pidfd_open(child)
        self.terminate()
        if init is not None:
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(init, signal.SIGKILL)
                select.select([init], [], [], 10)
            os.close(init)
        with contextlib.suppress(OSError):
            self.sock.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)
        if self.proc.stderr is not None:
            self.proc.stderr.close()
        if self.pids is not None:
            self.pids.close()

    async def receive(self, timeout: float | None) -> dict[str, object] | None:
        """The supervisor's next message; None when it closed the socket. Raises
        ``TimeoutError`` after ``timeout`` seconds."""
        loop = asyncio.get_running_loop()

        async def read() -> dict[str, object] | None:
            while b"\n" not in self.buffer:
                chunk = await loop.sock_recv(self.sock, 65536)
                if not chunk:
                    return None
                self.buffer += chunk
            line, _, self.buffer = self.buffer.partition(b"\n")
            message = json.loads(line)
            return message if isinstance(message, dict) else None

        return await asyncio.wait_for(read(), timeout)

    async def send(self, message: dict[str, object], fd: int | None = None) -> None:
        body = json.dumps(message).encode()
        head = struct.pack("!I", len(body))
        loop = asyncio.get_running_loop()
        if fd is not None:
            socket.send_fds(self.sock, [head], [fd])
        else:
            await loop.sock_sendall(self.sock, head)
        await loop.sock_sendall(self.sock, body)


class SessionSandbox:
    """A kept sandbox for one shell tool's commands (see the module docstring). :meth:`run`
    raises :class:`SandboxUnavailable` when none can be had (the caller runs the command in a
    per-call sandbox instead); :meth:`close` ends it."""

    def __init__(self, confiner: BwrapConfiner, workspace: Path, roots: Sequence[Path]) -> None:
        self.confiner = confiner
        self.workspace = workspace
        self.roots = tuple(roots)
        self._slot: list[_Box] = []  # the running sandbox, if any (a list: see _close_slot)
        self._lock = threading.Lock()
        #: why the supervisor could not start (then every command runs per call)
        self.broken: str | None = None
        #: sandboxes started so far (for tests and the bench)
        self.started = 0
        weakref.finalize(self, _close_slot, self._slot)

    @property
    def _box(self) -> _Box | None:
        return self._slot[0] if self._slot else None

    def close(self) -> None:
        """End the sandbox (the next command would start a new one)."""
        _close_slot(self._slot)

    def _start(self, args: tuple[str, ...]) -> _Box:
        ours = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
        found = (p for p in (ours, "/usr/bin/python3") if os.path.isfile(p) and _visible(p, args))
        python = next(found, None)
        if python is None:
            raise SandboxUnavailable("no Python interpreter is visible inside the sandbox")
        home = self.confiner.home
        reset = ["/tmp", "/dev/shm", "/dev"]
        if home is not None and home != Path("/"):
            reset.append(str(home))
        host, inside = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        # --mqueue shows the supervisor the POSIX message queues a command left; --as-pid-1
        # makes it the namespace's init, no other (bubblewrap's own init is dumpable).
        argv = [self.confiner.executable, *args, "--mqueue", "/dev/mqueue", "--as-pid-1", "--"]
        argv += [python, "-I", "-S", "-c", BOOTSTRAP, str(inside.fileno()), json.dumps(reset)]
        pids = PidsCgroup.create(self.confiner.max_processes)
        if pids is not None:
            argv = pids.wrap(argv)
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                env={"PATH": "/usr/bin:/bin"},
                pass_fds=(inside.fileno(),),
                start_new_session=True,
            )
        except OSError as exc:
            host.close()
            if pids is not None:
                pids.close()
            raise SandboxUnavailable(f"bubblewrap did not start: {exc}") from exc
        finally:
            inside.close()
        source = SUPERVISOR.encode()
        host.sendall(struct.pack("!I", len(source)) + source)  # before any reader: it fits
        host.setblocking(False)
        return _Box(proc, host, args, pids)

    async def _ready(self, box: _Box) -> None:
        try:
            message = await box.receive(30)
        except (TimeoutError, OSError, ValueError):
            message = None
        if message is None or message.get("op") != "ready":
            box.kill()
            detail = b""
            if box.proc.stderr is not None:
                with contextlib.suppress(OSError, ValueError):
                    detail = box.proc.stderr.read() or b""
            why = detail.decode(errors="replace").strip().splitlines()
            raise SandboxUnavailable(
                "the sandbox supervisor did not start" + (f": {why[-1]}" if why else "")
            )

    def reusable(self, args: tuple[str, ...], fingerprint: object, now: tuple[str, ...]) -> bool:
        """Whether a sandbox made with ``args`` (its paths then ``fingerprint``) is the one a
        fresh sandbox would be now (``now``: this command's arguments)."""
        return args == now and fingerprint == _fingerprint(now)

    async def _box_for(self, args: tuple[str, ...]) -> _Box:
        box = self._box
        if box is not None and not (
            await self._reset_done(box)
            and box.alive()
            and self.reusable(box.args, box.fingerprint, args)
        ):
            self.close()
            box = None
        if box is None:
            box = self._start(args)
            try:
                await self._ready(box)
            except SandboxUnavailable as exc:
                self.broken = str(exc)
                raise
            box.fingerprint = _fingerprint(args)  # after bubblewrap made its mount points
            box.idle = box.pids.current() if box.pids is not None else -1
            self._slot[:] = [box]
            self.started += 1
        return box

    async def run(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        out_fd: int,
        *,
        limit: float,
        grace: float,
    ) -> SupervisedRun:
        """Run ``argv`` (a shell command line) under the confiner's bounds with its stdout and
        stderr on ``out_fd`` (closed here, whatever happens: the reader of its pipe sees the
        end); see the module docstring."""
        if self.broken is not None or not self._lock.acquire(blocking=False):
            os.close(out_fd)
            raise SandboxUnavailable(self.broken or "the kept sandbox is busy")
        box: _Box | None = None
        try:
            try:
                args = tuple(self.confiner.arguments(workspace=self.workspace, roots=self.roots))
                box = await self._box_for(args)
                limits = self.confiner.rlimits()
                await box.send({"argv": list(argv), "env": dict(env), "limits": limits}, out_fd)
            except OSError as exc:  # no new sandbox, or the supervisor went since the last command
                raise SandboxUnavailable(f"the kept sandbox is gone: {exc}") from exc
            finally:
                os.close(out_fd)
            result = await self._wait(box, limit, grace)
            box = None
            return result
        finally:
            if box is not None:  # cancelled, or the socket failed: nothing of it may go on
                self._discard(box)
            self._lock.release()

    async def _wait(self, box: _Box, limit: float, grace: float) -> SupervisedRun:
        timed_out = False
        over_limit = False
        watchdog = self._watchdog(box)
        try:
            try:
                message = await box.receive(limit)
            except TimeoutError:
                timed_out = True
                message = await self._stop(box, grace)
            except (OSError, ValueError):  # a broken socket or message: the sandbox goes
                message = None
        finally:
            if watchdog is not None:
                watchdog.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    over_limit = await watchdog
        if box.pids is not None:
            refusals = box.pids.refusals()
            over_limit = over_limit or refusals > box.refusals
            box.refusals = refusals
        clean = message is not None and message.get("clean") is True
        # Trust, but count: only the supervisor (the namespace's init) may be left.
        if clean and not await self._only_supervisor_left(box):
            clean = False
        code_value = message.get("code") if message is not None else None
        if not isinstance(code_value, int):
            code_value = box.proc.poll()
        code = code_value if isinstance(code_value, int) else -1
        if not clean:
            self._discard(box)
        box.resetting = clean
        return SupervisedRun(code, timed_out, over_limit)

    async def _reset_done(self, box: _Box) -> bool:
        """Wait for the supervisor's report that the last command's ``/tmp``, ``/dev`` and home
        are back to how they started: whether the sandbox is fit for the next command."""
        if not box.resetting:
            return True
        box.resetting = False
        try:
            message = await box.receive(30)
        except (TimeoutError, OSError, ValueError):
            return False
        return message is not None and message.get("op") == "reset" and message.get("clean") is True

    async def _only_supervisor_left(self, box: _Box) -> bool:
        """Whether the sandbox holds no process but the supervisor (its init): its cgroup's
        count where there is one (a file read, exact), else a look at every process's PID
        namespace."""
        if box.pids is not None and box.idle > 0:
            return box.pids.current() == box.idle
        return await asyncio.to_thread(sandbox_process_count, box.proc.pid) <= 1

    async def _stop(self, box: _Box, grace: float) -> dict[str, object] | None:
        """Out of time: SIGTERM to the command's group, SIGKILL after ``grace``; a supervisor
        that does not answer then is killed with its sandbox."""
        for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
            try:
                await box.send({"signal": int(sig)})
                return await box.receive(wait)
            except (TimeoutError, OSError, ValueError):
                continue
        self._discard(box)
        return None

    def _watchdog(self, box: _Box) -> asyncio.Task[bool] | None:
        """For an agent running as root: stop the sandbox once its PID namespace holds more
        than the bound (plus the supervisor). The cgroup's bound, where there is one, holds
        for root too and cannot be outrun."""
        bound = watchdog_bound(self.confiner)
        if not bound or box.pids is not None:
            return None
        # the socket's end then tells the waiting command
        watch = watch_processes(box.proc.pid, bound + 1, box.alive, box.terminate)
        return asyncio.create_task(watch)

    def _discard(self, box: _Box) -> None:
        if box in self._slot:
            self._slot.clear()
        box.kill()


def _close_slot(slot: list[_Box]) -> None:
    """End the sandbox in ``slot`` (also when its owner is collected: the finalizer holds the
    slot, never the owner)."""
    boxes = list(slot)
    slot.clear()
    for box in boxes:
        box.kill()
