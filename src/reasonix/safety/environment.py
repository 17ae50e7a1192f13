"""The one builder of subprocess environments: an allowlist, plus what the user configures.

Every process reasonix starts (the bash tool, MCP servers, git) gets its environment from
:func:`build_environment` (:func:`git_environment` for our own git), never from ``os.environ``
minus a denylist: a denylist misses the secret nobody thought of (``GITHUB_TOKEN``, a proxy URL
with a password, ``PIP_INDEX_URL`` with a token), an allowlist passes only what programs need
to run (:data:`ALLOWED_NAMES`: the basics, toolchain locations that hold no secret, CA bundles).
Then the user's own ``[environment]`` table: ``include`` patterns pass more through, ``set``
sets values. ``withheld`` names (our providers' key variables) are removed last, so not even
``include = ["*"]`` hands over a key; only an explicit value (an MCP entry's own ``env``) sets one.

The agent's own keys: :func:`take_from_environment` reads the provider key variables once at
start-up, removes them from ``os.environ`` and, on Linux, blanks them in the process's original
environment block too (what ``/proc/<pid>/environ`` shows), so the key lives only in memory, in
the provider that sends it. This module imports nothing heavy.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import sys
from collections.abc import Iterable, Mapping

__all__ = [
    "ALLOWED_NAMES",
    "ALLOWED_PREFIXES",
    "QUIET_GIT",
    "build_environment",
    "git_environment",
    "is_allowed",
    "take_from_environment",
]

#: Variables every subprocess gets when the parent has them.
ALLOWED_NAMES: frozenset[str] = frozenset(
    {
        # the basics
        "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "COLORTERM", "NO_COLOR", "FORCE_COLOR",
        "CLICOLOR", "COLUMNS", "LINES", "TMPDIR", "TEMP", "TMP", "TZ", "LANG", "LANGUAGE", "PWD",
        # where toolchains live (locations, not credentials)
        "VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV", "PYENV_ROOT", "PYTHONIOENCODING",
        "PYTHONUTF8", "PYTHONDONTWRITEBYTECODE", "UV_CACHE_DIR", "PIP_CACHE_DIR", "GOPATH",
        "GOROOT", "GOCACHE", "GOMODCACHE", "GOFLAGS", "CARGO_HOME", "RUSTUP_HOME", "JAVA_HOME",
        "GRADLE_USER_HOME", "MAVEN_OPTS", "NVM_DIR", "NODE_PATH", "NPM_CONFIG_CACHE",
        "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR",
        "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
        "NODE_EXTRA_CA_CERTS",
        # Windows needs these to start anything at all
        "SYSTEMROOT", "SYSTEMDRIVE", "COMSPEC", "PATHEXT", "WINDIR", "USERPROFILE", "APPDATA",
        "LOCALAPPDATA",
    }
)  # fmt: skip
#: Prefixes of variables every subprocess gets (locale settings).
ALLOWED_PREFIXES: tuple[str, ...] = ("LC_",)

#: What every git of ours is given so that the repository it reads runs no program of its own
#: (no hook, no fsmonitor); each caller adds what its commands need besides.
QUIET_GIT: tuple[str, ...] = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false")


def is_allowed(name: str, include: Iterable[str] = ()) -> bool:
    """Whether ``name`` passes the allowlist, or one of the user's ``include`` patterns."""
    if name in ALLOWED_NAMES or name.startswith(ALLOWED_PREFIXES):
        return True
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in include)


def build_environment(
    *,
    include: Iterable[str] = (),
    extra: Mapping[str, str] | None = None,
    withheld: Iterable[str] = (),
    base: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment for a subprocess: ``base`` (default ``os.environ``) filtered through the
    allowlist and the ``include`` patterns, less the ``withheld`` names, then ``extra`` on top
    (explicit values always win: the user wrote them)."""
    source = os.environ if base is None else base
    patterns = tuple(include)
    keep_out = set(withheld)
    env = {
        name: value
        for name, value in source.items()
        if name not in keep_out and is_allowed(name, patterns)
    }
    if extra:
        env.update(extra)
    return env


def git_environment(
    *,
    include: Iterable[str] = (),
    withheld: Iterable[str] = (),
    base: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment for our own git commands: the allowlist (so no ``GIT_DIR``,
    ``GIT_CONFIG_*`` or ``GIT_SSH_COMMAND`` from the parent steers them), no system config, no
    credential prompts, and a fixed locale so output can be parsed."""
    env = build_environment(include=include, withheld=withheld, base=base)
    env.update(
        {
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_OPTIONAL_LOCKS": "0",
            "LC_ALL": "C",
        }
    )
    return env


def take_from_environment(names: Iterable[str]) -> dict[str, str]:
    """Remove ``names`` from this process's environment (``os.environ``, so no child inherits
    them, and, best effort, the original block ``/proc/self/environ`` shows) and return the
    values that were set."""
    taken: dict[str, str] = {}
    for name in dict.fromkeys(names):
        value = os.environ.pop(name, None)  # os.environ.pop also unsets it in the C runtime
        if value:
            taken[name] = value
    if taken and sys.platform.startswith("linux"):
        _blank_initial_environment(taken)
        _forbid_memory_reads()
    return taken


_PR_SET_DUMPABLE = 4


def _forbid_memory_reads() -> None:
    """Mark this process non-dumpable, so the keys it now holds only in memory cannot be read
    by another process of the same user (``/proc/<pid>/mem``, ``ptrace``, ``/proc/<pid>/environ``:
    an unconfined command reading its parent), nor written to a core dump. A process with
    ``CAP_SYS_PTRACE`` (root, usually) still can: only confinement (a PID namespace) stops that.
    Children are unaffected: the flag resets when they run a program. Best effort."""
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)


def _blank_initial_environment(taken: Mapping[str, str]) -> None:
    """Overwrite ``NAME=value`` entries in the block between the kernel's ``env_start`` and
    ``env_end`` with NUL bytes. Safe once the variables are unset: the C runtime's ``environ``
    no longer points at those strings."""
    try:
        with open("/proc/self/stat", encoding="ascii") as fh:
            stat = fh.read()
        # Fields after the command name (which may hold spaces) start at field 3; env_start and
        # env_end are fields 50 and 51 (proc(5)).
        rest = stat[stat.rindex(")") + 2 :].split()
        start, end = int(rest[50 - 3]), int(rest[51 - 3])
        if not 0 < start < end:
            return
        with open("/proc/self/mem", "r+b", buffering=0) as mem:
            mem.seek(start)
            block = bytearray(mem.read(end - start))
            changed = False
            for name, value in taken.items():
                entry = f"{name}={value}".encode("utf-8", "surrogateescape")
                at = 0
                while (at := block.find(entry, at)) >= 0:
                    boundary = at == 0 or block[at - 1] == 0
                    ends = at + len(entry) == len(block) or block[at + len(entry)] == 0
                    if boundary and ends:
                        block[at : at + len(entry)] = bytes(len(entry))
                        changed = True
                    at += len(entry)
            if changed:
                mem.seek(start)
                mem.write(bytes(block))
    except (OSError, ValueError, IndexError):
        return
