"""Confinement of shell commands: one interface (:class:`Confiner`), one implementation per OS
mechanism.

- :class:`BwrapConfiner` (Linux, bubblewrap) builds the sandbox the README's sandbox section
  describes: system folders read-only, the workspace roots writable, a private ``/tmp``, an empty
  home showing only :data:`TOOLCHAIN_DIRS` and ``[sandbox] allow_read`` (read-only), the
  :data:`SECRET_HOME_PATHS` and our own folders masked even inside a bound folder, nothing above
  the workspace, its own namespaces (network only with ``[sandbox] network = true``), no
  capabilities, a new terminal session, bounded processes and address space; it dies with its
  parent, and every process in its PID namespace with it (``setsid`` daemons included).
- :class:`NoConfiner` runs the command unconfined; :class:`UnavailableConfiner` refuses it
  (``bash = "bwrap"`` where bubblewrap cannot work).

:func:`confinement_for` chooses from ``[sandbox]``: ``bash = "auto"`` (the default) confines
where bubblewrap works, ``"bwrap"`` requires it, ``"off"`` runs unconfined. A macOS Seatbelt
profile would be one more ``Confiner``.

Residual risks: the process bound is a ``pids`` cgroup per command where the agent may create
one (:class:`PidsCgroup`), else ``RLIMIT_NPROC``, which does not bind root; for root without
cgroups a watchdog counts the PID namespace's processes (:func:`sandbox_process_count`), which a
fast fork loop can briefly outrun. System folders are readable, the workspace writable by design.

It runs past 500 lines because choosing, probing and applying confinement are one decision:
the probe that says whether bubblewrap works, the arguments that build the sandbox and the
process bound must agree on the same namespaces and limits.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from reasonix.safety.protected import bind_arguments

if TYPE_CHECKING:
    from reasonix.config.schema import SandboxConfig, SandboxMode


#: System folders bound read-only (when they exist); symlinks (merged /usr) are kept as links.
SYSTEM_PATHS: tuple[str, ...] = (
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/nix", "/gnu",
)  # fmt: skip

#: Folders below the home folder that hold toolchains (interpreters, compilers, installed
#: packages) a test run needs; bound read-only when they exist.
TOOLCHAIN_DIRS: tuple[str, ...] = (
    ".pyenv", ".cargo", ".rustup", ".local/bin", ".local/lib", ".local/share/uv", ".nvm", ".volta",
    ".bun", ".deno", ".rbenv", ".sdkman", ".elan", ".ghcup", "go/bin", "go/pkg/mod",
)  # fmt: skip

#: Below the home folder: never visible, whatever is bound (credentials, keys, browser
#: profiles, tokens of command-line tools; ``.local/share/uv/credentials`` is uv auth's
#: plaintext store, inside a toolchain folder).
SECRET_HOME_PATHS: tuple[str, ...] = (
    ".ssh", ".aws", ".gnupg", ".netrc", ".git-credentials", ".npmrc", ".pypirc", ".docker", ".kube",
    ".azure", ".password-store", ".pgpass", ".cargo/credentials", ".cargo/credentials.toml",
    ".local/share/uv/credentials", ".config/gh", ".config/gcloud", ".config/hub",
    ".config/google-chrome", ".config/chromium", ".config/BraveSoftware", ".mozilla",
    ".thunderbird", ".local/share/keyrings", "snap/firefox",
)  # fmt: skip

DEFAULT_MAX_PROCESSES = 512
DEFAULT_MAX_MEMORY_MB = 16384


class ConfinementError(Exception):
    """A command cannot be confined as configured; the message says what to install or set."""


class Confiner(Protocol):
    """Turns a command line into one that runs it confined."""

    @property
    def name(self) -> str: ...  # "bwrap", "none", ...

    @property
    def confined(self) -> bool: ...  # False for NoConfiner

    def wrap(self, argv: Sequence[str], *, workspace: Path, roots: Sequence[Path]) -> list[str]:
        """The command line that runs ``argv`` confined to ``roots`` (writable), starting in
        ``workspace``. Raises :class:`ConfinementError` when it cannot."""
        ...

    def describe(self) -> str:
        """One line for the start-up banner and ``doctor``."""
        ...


class NoConfiner:
    """Runs commands as they are: no confinement."""

    name = "none"
    confined = False

    def __init__(self, reason: str = "") -> None:
        self.reason = reason

    def wrap(self, argv: Sequence[str], *, workspace: Path, roots: Sequence[Path]) -> list[str]:
        return list(argv)

    def describe(self) -> str:
        return "bash is NOT confined" + (f" ({self.reason})" if self.reason else "")


class UnavailableConfiner:
    """Confinement was required (``[sandbox] bash = "bwrap"``) but cannot be had: every command
    is refused with the reason, rather than run unconfined."""

    name = "unavailable"
    confined = True

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def wrap(self, argv: Sequence[str], *, workspace: Path, roots: Sequence[Path]) -> list[str]:
        raise ConfinementError(self.reason)

    def describe(self) -> str:
        return f"bash is refused: {self.reason}"


#: The shell's ``ulimit`` flag for each bound of :meth:`BwrapConfiner.rlimits`, and the bytes
#: (or processes) in one of its units.
ULIMIT_FLAGS = {"RLIMIT_NPROC": ("-u", 1), "RLIMIT_AS": ("-v", 1024)}


@dataclass(frozen=True)
class BwrapConfiner:
    """bubblewrap confinement; see the module docstring for what it confines.

    ``home`` is the folder replaced by an empty one; ``private`` are extra paths that must never
    be visible (our configuration and data folders); ``allow_read`` are folders or files the user
    allowed read-only. ``max_processes`` bounds processes (``RLIMIT_NPROC``), ``max_memory_mb``
    the address space of each process (``RLIMIT_AS``); 0 means no bound.
    """

    executable: str
    network: bool = False
    home: Path | None = None
    allow_read: tuple[Path, ...] = ()
    private: tuple[Path, ...] = ()
    #: folders of programs the command may run (``PATH`` entries, our own Python), read-only
    programs: tuple[Path, ...] = ()
    max_processes: int = DEFAULT_MAX_PROCESSES
    max_memory_mb: int = DEFAULT_MAX_MEMORY_MB
    #: the options of :data:`HARDENING_OPTIONS` this bubblewrap has (:func:`bwrap_features`)
    features: frozenset[str] = frozenset()
    name: str = field(default="bwrap", init=False)
    confined: bool = field(default=True, init=False)

    def describe(self) -> str:
        net = "network on" if self.network else "no network"
        return f"bash is confined by bubblewrap (workspace writable, home hidden, {net})"

    def secret_paths(self) -> list[Path]:
        """Paths masked in every sandbox."""
        out = [*self.private]
        if self.home is not None:
            out += [self.home / p for p in SECRET_HOME_PATHS]
        return out

    def wrap(self, argv: Sequence[str], *, workspace: Path, roots: Sequence[Path]) -> list[str]:
        inner = self.limited(argv)
        return [self.executable, *self.arguments(workspace=workspace, roots=roots), "--", *inner]

    def arguments(self, *, workspace: Path, roots: Sequence[Path]) -> list[str]:
        """The bubblewrap options (without the executable and the command)."""
        args = self._namespaces()
        for path in SYSTEM_PATHS:
            if os.path.islink(path):
                args += ["--symlink", os.readlink(path), path]
            elif os.path.isdir(path):
                args += ["--ro-bind", path, path]
        if self.network and os.path.isdir("/run/systemd/resolve"):
            # /etc/resolv.conf often points here.
            args += ["--ro-bind", "/run/systemd/resolve", "/run/systemd/resolve"]
        bound: list[Path] = []
        args += self._scratch(bound)
        hidden = tuple(os.path.join(secret, "") for secret in self.secret_paths())
        for readable in (*self.programs, *self.allow_read):
            # A secret or a path inside one (allow_read = ["~/.ssh/id_rsa"]) is never shown:
            # masking covers what lies below a bound folder, not a bind inside the secret.
            if os.path.join(readable, "").startswith(hidden):
                continue
            if readable.exists() and readable not in bound:
                args += ["--ro-bind", str(readable), str(readable)]
                bound.append(readable)
        for root in roots:
            args += ["--bind", str(root), str(root)]
            bound.append(Path(root))
        # What makes code run later outside the sandbox stays read-only inside it.
        args += bind_arguments([Path(os.path.realpath(r)) for r in roots])
        args += self._covered_secrets(bound)
        return [*args, "--remount-ro", "/", "--chdir", str(workspace)]

    def _namespaces(self) -> list[str]:
        args = ["--unshare-all"]
        if "--disable-userns" in self.features:
            # No user namespace inside: a nested one is where most kernel escapes start.
            args += ["--unshare-user", "--disable-userns"]
        if self.network:
            args.append("--share-net")
        return [*args, "--die-with-parent", "--new-session", "--cap-drop", "ALL"]

    def _scratch(self, bound: list[Path]) -> list[str]:
        """``/proc``, ``/dev``, the temporary folders and the empty home (with the toolchain
        folders in it, added to ``bound``)."""
        # Files in a tmpfs are memory that no process limit counts: each is bounded like a
        # process's address space, and the sandbox's own root folder is read-only.
        size = (
            ["--size", str(self.max_memory_mb * 1024 * 1024)]
            if "--size" in self.features and self.max_memory_mb > 0
            else []
        )
        args = ["--proc", "/proc", "--dev", "/dev", *size, "--tmpfs", "/dev/shm"]
        args += [*size, "--tmpfs", "/tmp"]
        home = self.home
        if home is not None and home != Path("/"):
            args += [*size, "--tmpfs", str(home)]
            for rel in TOOLCHAIN_DIRS:
                tool_dir = home / rel
                if tool_dir.exists():
                    args += ["--ro-bind", str(tool_dir), str(tool_dir)]
                    bound.append(tool_dir)
        return args

    def _covered_secrets(self, bound: Sequence[Path]) -> list[str]:
        """Secrets inside anything bound are covered up: a workspace that is the home folder,
        a toolchain folder holding a credentials file, an allow_read entry that went too far."""
        args: list[str] = []
        folders = tuple(os.path.join(b, "") for b in bound)  # "/a/b/": prefixes, no is_relative_to
        for secret in self.secret_paths():
            if not os.path.join(secret, "").startswith(folders):
                continue
            if secret.is_dir() and not secret.is_symlink():
                args += ["--tmpfs", str(secret), "--remount-ro", str(secret)]
            elif secret.exists() or secret.is_symlink():
                args += ["--ro-bind", "/dev/null", str(secret)]
        return args

    def rlimits(self) -> list[tuple[str, int]]:
        """The bounds of each command, as ``resource`` names and values: ``RLIMIT_NPROC``
        processes, ``RLIMIT_AS`` bytes (the kept sandbox's supervisor sets them itself)."""
        out = []
        if self.max_processes > 0:
            out.append(("RLIMIT_NPROC", self.max_processes))
        if self.max_memory_mb > 0:
            out.append(("RLIMIT_AS", self.max_memory_mb * 1024 * 1024))
        return out

    def limited(self, argv: Sequence[str]) -> list[str]:
        """``argv`` (a shell command line) behind the bounds of :meth:`rlimits`, set inside the
        sandbox's own user namespace so only the sandbox's processes count."""
        limits = [
            f"ulimit {ULIMIT_FLAGS[name][0]} {value // ULIMIT_FLAGS[name][1]}"
            for name, value in self.rlimits()
        ]
        if not limits or len(argv) < 3:
            return list(argv)
        shell, flag, *rest = argv
        # $0 is the shell, $1.. its arguments; a failing ulimit (a lower hard limit) keeps the
        # lower limit, which is fine.
        script = "; ".join(f"{limit} 2>/dev/null" for limit in limits) + '; exec "$0" "$@"'
        return [shell, "-c", script, shell, flag, *rest]


# ---------------------------------------------------------------------------------------------
# Choosing


_PROBES: dict[str, subprocess.Popen[str]] = {}
_PROBE_RESULTS: dict[str, str | None] = {}


#: Options newer bubblewraps have that harden the sandbox: ``--size`` bounds a tmpfs (0.5),
#: ``--disable-userns`` refuses nested user namespaces (0.8). Used where present.
HARDENING_OPTIONS = ("--size", "--disable-userns")
_FEATURES: dict[str, frozenset[str]] = {}


def bwrap_features(executable: str) -> frozenset[str]:
    """The :data:`HARDENING_OPTIONS` this bubblewrap lists in its ``--help``."""
    if executable not in _FEATURES:
        try:
            help_text = subprocess.run(
                [executable, "--help"], capture_output=True, text=True, timeout=30, check=False
            ).stdout
        except (OSError, subprocess.TimeoutExpired):
            help_text = ""
        _FEATURES[executable] = frozenset(o for o in HARDENING_OPTIONS if o + " " in help_text)
    return _FEATURES[executable]


def start_bwrap_probe(environ: Mapping[str, str] | None = None) -> None:
    """Start checking, in the background, whether bubblewrap works here, so start-up does not
    wait for it (:func:`bwrap_problem` collects the answer)."""
    executable = _bwrap_on_path(os.environ if environ is None else environ)
    if executable is None or executable in _PROBES or executable in _PROBE_RESULTS:
        return
    with contextlib.suppress(OSError):
        _PROBES[executable] = _start_probe(executable)


def _bwrap_on_path(env: Mapping[str, str]) -> str | None:
    found = shutil.which("bwrap", path=env.get("PATH", os.defpath))
    return None if found is None else os.path.realpath(found)


def _start_probe(executable: str) -> subprocess.Popen[str]:
    """bubblewrap making a small sandbox that runs ``true``; its stderr says why it cannot."""
    features = bwrap_features(executable)
    probe = BwrapConfiner(executable, max_processes=0, max_memory_mb=64, features=features)
    argv = probe.wrap(["/bin/sh", "-c", "true"], workspace=Path("/"), roots=())
    devnull = subprocess.DEVNULL
    return subprocess.Popen(argv, stdin=devnull, stdout=devnull, stderr=subprocess.PIPE, text=True)


def bwrap_problem(executable: str) -> str | None:
    """Why bubblewrap cannot make a sandbox on this machine (None when it can). Ubuntu 24.04
    and some containers forbid the unprivileged user namespaces it needs."""
    if executable in _PROBE_RESULTS:
        return _PROBE_RESULTS[executable]
    proc = _PROBES.pop(executable, None)
    try:
        if proc is None:
            proc = _start_probe(executable)
        _, stderr = proc.communicate(timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        if proc is not None:
            proc.kill()
            proc.wait()
        problem: str | None = f"bubblewrap could not start: {exc}"
    else:
        problem = None
        if proc.returncode != 0:
            detail = (stderr or "").strip().splitlines()
            why = detail[-1] if detail else f"exit code {proc.returncode}"
            problem = (
                f"bubblewrap is installed but cannot create a sandbox here ({why}); on Ubuntu "
                "24.04 allow unprivileged user namespaces (sysctl "
                "kernel.apparmor_restrict_unprivileged_userns=0 or an AppArmor profile for bwrap)"
            )
    _PROBE_RESULTS[executable] = problem
    return problem


@dataclass(frozen=True)
class BashConfinement:
    """The confinement chosen for this run, and what to tell the user about it.

    ``notice`` is set when bash runs unconfined (for the banner and ``doctor``);
    ``acknowledged`` when the user's own configuration accepted that (``bash = "off"`` or
    ``allow_unconfined = true``)."""

    confiner: Confiner
    mode: SandboxMode
    notice: str | None = None
    acknowledged: bool = False

    def unattended_error(self, what: str) -> str | None:
        """The error for running bash without asking (``what``: "yolo mode", "--yes") when it
        would run unconfined and the user has not accepted that; None when it may run."""
        if self.confiner.confined or self.acknowledged:
            return None
        return (
            f"{what} runs shell commands without asking, but {self.notice}. Install bubblewrap "
            "(e.g. apt install bubblewrap), or accept unconfined commands in your own config "
            'file with [sandbox] allow_unconfined = true (or bash = "off").'
        )


def confinement_for(
    sandbox: SandboxConfig | None = None,
    *,
    data_dir: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> BashConfinement:
    """Choose the confinement from the user's ``[sandbox]`` table (its defaults without one; see
    the module docstring). bubblewrap is looked up on ``PATH`` (``environ``'s, default ours);
    our configuration folder and ``data_dir`` (the session store) are never visible to
    commands."""
    from reasonix.config import user_config_path
    from reasonix.config.schema import SandboxConfig

    chosen = SandboxConfig() if sandbox is None else sandbox
    env = os.environ if environ is None else environ
    if chosen.bash == "off":
        reason = 'turned off in your config ([sandbox] bash = "off")'
        return BashConfinement(NoConfiner(reason), "off", f"bash is NOT confined ({reason})", True)
    home_text = env.get("HOME") or os.path.expanduser("~")
    home = Path(os.path.realpath(home_text)) if home_text else None
    bwrap = _bwrap_on_path(env)
    if bwrap is not None:
        problem = bwrap_problem(bwrap)
    elif sys.platform.startswith("linux"):
        problem = "bubblewrap (bwrap) is not installed"
    else:
        problem = "no sandbox for bash exists on this system yet (bubblewrap is Linux-only)"
    if bwrap is not None and problem is None:
        readable = []
        for entry in chosen.allow_read:
            expanded = os.path.expanduser(entry) if entry.startswith("~") and home else entry
            if entry.startswith("~/") and home is not None:
                expanded = str(home / entry[2:])
            readable.append(Path(os.path.realpath(expanded)))
        private = [user_config_path(environ).parent, *([data_dir] if data_dir else [])]
        confiner = BwrapConfiner(
            bwrap,
            network=chosen.network,
            home=home,
            allow_read=tuple(readable),
            programs=program_folders(env.get("PATH", ""), home),
            private=tuple(Path(os.path.realpath(p)) for p in private),
            max_processes=chosen.max_processes,
            max_memory_mb=chosen.max_memory_mb,
            features=bwrap_features(bwrap),
        )
        return BashConfinement(confiner, "bwrap" if chosen.bash == "bwrap" else "auto")
    assert problem is not None
    if chosen.bash == "bwrap":
        reason = (
            f'[sandbox] bash = "bwrap" but {problem}. Install bubblewrap (e.g. apt install '
            'bubblewrap) or set [sandbox] bash = "auto" or "off" in your config'
        )
        return BashConfinement(UnavailableConfiner(reason), "bwrap")
    notice = f"bash is NOT confined: {problem}"
    return BashConfinement(NoConfiner(problem), "auto", notice, chosen.allow_unconfined)


def first_child(pid: int) -> int | None:
    """The first child of process ``pid`` (the sandbox's init, for an outer bubblewrap), or None."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            children = f.read().split()
        return int(children[0]) if children else None
    except (OSError, ValueError):
        return None


def sandbox_process_count(pid: int) -> int:
    """How many processes live in the PID namespace of the sandbox whose outer bubblewrap
    process is ``pid`` (0 when it cannot be told); the watchdog's measure."""
    child = first_child(pid)
    if child is None:
        return 0
    try:
        inner = os.readlink(f"/proc/{child}/ns/pid")
        if inner == os.readlink(f"/proc/{pid}/ns/pid"):
            return 0
        names = os.listdir("/proc")
    except OSError:
        return 0
    count = 0
    for name in names:
        if name.isdigit():
            with contextlib.suppress(OSError):
                if os.readlink(f"/proc/{name}/ns/pid") == inner:
                    count += 1
    return count


def watchdog_bound(confiner: Confiner) -> int:
    """The process bound a watchdog must hold for ``confiner``'s commands: for an agent running
    as root, whom ``RLIMIT_NPROC`` does not bound (0: no watchdog)."""
    if not isinstance(confiner, BwrapConfiner) or confiner.max_processes <= 0:
        return 0
    return confiner.max_processes if hasattr(os, "geteuid") and os.geteuid() == 0 else 0


async def watch_processes(
    pid: int, bound: int, running: Callable[[], bool], stop: Callable[[], None]
) -> bool:
    """While ``running()``, ``stop()`` the sandbox of outer bubblewrap ``pid`` once its PID
    namespace holds more than ``bound`` processes; whether it had to."""
    import asyncio

    while running():
        if await asyncio.to_thread(sandbox_process_count, pid) > bound:
            stop()
            return True
        await asyncio.sleep(0.02)
    return False


def program_folders(path_env: str, home: Path | None) -> tuple[Path, ...]:
    """Folders holding the programs a command may run: the ``PATH`` entries and our own
    Python's installation (a virtualenv outside the workspace), never ``/`` or the home folder
    itself (nor anything above it)."""
    candidates = [*path_env.split(os.pathsep), sys.prefix, sys.base_prefix]
    out: list[Path] = []
    for entry in candidates:
        if not entry or not os.path.isabs(entry):
            continue
        real = Path(os.path.realpath(entry))
        # A toolchain's bin folder needs the rest of it (pyenv's shims run pyenv itself); only
        # whole-folder toolchains, never ~/.local, whose share/ and state/ hold keyrings and
        # shell histories (~/.local/bin on PATH shows ~/.local/bin alone).
        names = {d for d in TOOLCHAIN_DIRS if d.startswith(".") and "/" not in d}
        for k, part in enumerate(real.parts):
            if part in names:
                real = Path(*real.parts[: k + 1])
                break
        if real == Path("/") or (home is not None and home.is_relative_to(real)):
            continue
        if any(real.is_relative_to(system) for system in SYSTEM_PATHS):
            continue  # bound already
        if real.is_dir() and real not in out:
            out.append(real)
    return tuple(out)


_CGROUP_ROOT = Path("/sys/fs/cgroup")


class PidsCgroup:
    """A kernel bound on the processes of one confined command: a fresh ``pids`` cgroup with
    ``pids.max`` set, which the command joins before it starts. Unlike ``RLIMIT_NPROC`` it also
    holds for an agent running as root, and unlike the watchdog it cannot be outrun by a fast
    fork loop. Only where the agent may create cgroups (root in most containers); elsewhere
    :meth:`create` returns ``None`` and the rlimit and watchdog remain the bound."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def create(cls, bound: int, root: Path = _CGROUP_ROOT) -> PidsCgroup | None:
        """A new cgroup below ours that admits at most ``bound`` processes, or ``None``."""
        if bound <= 0:
            return None
        for parent in _own_pids_cgroups(root):
            path = parent / f"reasonix-{os.getpid()}-{os.urandom(4).hex()}"
            try:
                path.mkdir()
            except OSError:
                continue
            try:
                (path / "pids.max").write_text(f"{bound}\n")
            except OSError:
                with contextlib.suppress(OSError):
                    path.rmdir()
                continue
            return cls(path)
        return None

    def wrap(self, argv: Sequence[str]) -> list[str]:
        """``argv`` started by a shell that first moves itself into this cgroup, so the
        command and all it starts are counted from their first fork."""
        join = 'echo $$ > "$0" 2>/dev/null; exec "$@"'
        return ["/bin/sh", "-c", join, str(self.path / "cgroup.procs"), *argv]

    def hit_bound(self) -> bool:
        """Whether a fork was refused because the bound was reached."""
        return self.refusals() > 0

    def current(self) -> int:
        """How many processes the cgroup holds now (-1 when it cannot be read)."""
        try:
            return int((self.path / "pids.current").read_text())
        except (OSError, ValueError):
            return -1

    def refusals(self) -> int:
        """How many forks the bound has refused so far (a kept sandbox compares the count
        before and after each command)."""
        try:
            for line in (self.path / "pids.events").read_text().splitlines():
                name, _, value = line.partition(" ")
                if name == "max":
                    return int(value or 0)
        except (OSError, ValueError):
            pass
        return 0

    def close(self) -> None:
        """Kill whatever is still in the cgroup and remove it."""
        for _ in range(50):
            try:
                pids = (self.path / "cgroup.procs").read_text().split()
            except OSError:
                return
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError, ValueError):
                    os.kill(int(pid), 9)
            try:
                self.path.rmdir()
                return
            except OSError:
                time.sleep(0.02)


def _own_pids_cgroups(root: Path) -> list[Path]:
    """Where a child ``pids`` cgroup of this process's own cgroup would go: cgroup v1's ``pids``
    hierarchy, or cgroup v2's unified one when ``pids`` is enabled for children."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return []
    found: list[Path] = []
    for line in lines:
        _, controllers, own = line.split(":", 2)
        rel = own.lstrip("/")
        if "pids" in controllers.split(","):
            found.append(root / "pids" / rel)
        elif controllers == "":
            unified = (
                root / rel if (root / "cgroup.controllers").exists() else root / "unified" / rel
            )
            try:
                enabled = (unified / "cgroup.subtree_control").read_text().split()
            except OSError:
                continue
            if "pids" in enabled:
                found.append(unified)
    return [p for p in found if p.is_dir()]
