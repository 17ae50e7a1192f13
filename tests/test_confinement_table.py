"""The confinement's decisions as tables, in milliseconds: the bubblewrap arguments built for a
given home, workspace and settings (network off unless asked, secrets masked even inside a bound
folder, bounds on processes, memory and tmpfs sizes), the program folders a command may see, and
the choice between bubblewrap, no confinement and refusal. The real sandbox is proven by the
attacks in tests/security/test_bash_confinement.py (slow tier); these say which line decides."""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from reasonix.config.schema import SandboxConfig
from reasonix.safety import confinement
from reasonix.safety.confinement import (
    DEFAULT_MAX_MEMORY_MB,
    DEFAULT_MAX_PROCESSES,
    BashConfinement,
    BwrapConfiner,
    ConfinementError,
    NoConfiner,
    PidsCgroup,
    UnavailableConfiner,
    bwrap_features,
    bwrap_problem,
    confinement_for,
    program_folders,
    sandbox_process_count,
    start_bwrap_probe,
)

SHELL = ["/bin/bash", "-c", "echo hi"]


def pairs(args: list[str], option: str) -> list[str]:
    """The values following each ``option`` in ``args``."""
    return [args[i + 1] for i, a in enumerate(args[:-1]) if a == option]


def confiner(**kwargs: object) -> BwrapConfiner:
    return BwrapConfiner("/usr/bin/bwrap", **kwargs)  # type: ignore[arg-type]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("KEY\n")
    (home / ".aws").mkdir()
    (home / ".netrc").write_text("machine x password y\n")
    (home / ".pyenv" / "bin").mkdir(parents=True)
    (home / "project").mkdir()
    return home


# -- defaults -------------------------------------------------------------------------------------


def test_the_network_is_off_unless_asked_for() -> None:
    assert BwrapConfiner("/usr/bin/bwrap").network is False
    assert SandboxConfig().network is False
    off = confiner().arguments(workspace=Path("/"), roots=())
    assert "--unshare-all" in off and "--share-net" not in off
    on = confiner(network=True).arguments(workspace=Path("/"), roots=())
    assert "--share-net" in on
    assert "no network" in confiner().describe()
    assert "network on" in confiner(network=True).describe()


def test_default_bounds_and_flags() -> None:
    c = confiner()
    assert (c.max_processes, c.max_memory_mb) == (DEFAULT_MAX_PROCESSES, DEFAULT_MAX_MEMORY_MB)
    assert (DEFAULT_MAX_PROCESSES, DEFAULT_MAX_MEMORY_MB) == (512, 16384)
    assert c.confined is True and c.name == "bwrap"
    assert NoConfiner().confined is False
    assert UnavailableConfiner("why").confined is True
    args = c.arguments(workspace=Path("/"), roots=())
    for flag in ("--die-with-parent", "--new-session"):
        assert flag in args
    assert pairs(args, "--cap-drop") == ["ALL"]
    assert args[-4:] == ["--remount-ro", "/", "--chdir", "/"]


# -- secrets ---------------------------------------------------------------------------------------


def test_secrets_inside_a_bound_folder_are_masked(home: Path) -> None:
    """The workspace is the home folder itself: its keys must still be hidden."""
    args = confiner(home=home).arguments(workspace=home, roots=[home])
    assert pairs(args, "--bind") == [str(home)]
    ssh, aws, netrc = home / ".ssh", home / ".aws", home / ".netrc"
    # folders: an empty read-only tmpfs over them; files: /dev/null bound over them
    assert str(ssh) in pairs(args, "--tmpfs") and str(ssh) in pairs(args, "--remount-ro")
    assert str(aws) in pairs(args, "--tmpfs")
    assert [a for a in pairs(args, "--ro-bind") if a == "/dev/null"]
    assert args[args.index(str(netrc)) - 2 : args.index(str(netrc))] == ["--ro-bind", "/dev/null"]
    # a secret that does not exist is not mentioned
    assert str(home / ".gnupg") not in args


def test_secrets_outside_every_bound_folder_need_no_mask(home: Path) -> None:
    """Home is an empty tmpfs already: only what is bound can show a secret."""
    project = home / "project"
    args = confiner(home=home).arguments(workspace=project, roots=[project])
    assert str(home / ".ssh") not in args and str(home / ".netrc") not in args
    assert str(home) in pairs(args, "--tmpfs")  # the empty home


def test_private_folders_are_masked_when_a_root_holds_them(home: Path) -> None:
    data = home / "project" / ".reasonix-data"
    data.mkdir()
    args = confiner(home=home, private=(data,)).arguments(
        workspace=home / "project", roots=[home / "project"]
    )
    assert str(data) in pairs(args, "--tmpfs") and str(data) in pairs(args, "--remount-ro")
    elsewhere = confiner(home=home, private=(data,)).arguments(workspace=home, roots=[])
    assert str(data) not in elsewhere


def test_a_toolchain_folder_is_bound_read_only_and_a_secret_inside_it_masked(home: Path) -> None:
    (home / ".cargo" / "credentials.toml").parent.mkdir(parents=True)
    (home / ".cargo" / "credentials.toml").write_text("token = 'x'\n")
    args = confiner(home=home).arguments(workspace=home / "project", roots=[home / "project"])
    assert str(home / ".pyenv") in pairs(args, "--ro-bind")
    assert str(home / ".cargo") in pairs(args, "--ro-bind")
    cred = str(home / ".cargo" / "credentials.toml")
    assert args[args.index(cred) - 2 : args.index(cred)] == ["--ro-bind", "/dev/null"]


def test_a_root_home_gets_no_tmpfs() -> None:
    args = confiner(home=Path("/")).arguments(workspace=Path("/"), roots=())
    assert "/" not in pairs(args, "--tmpfs")
    assert pairs(args, "--tmpfs") == ["/dev/shm", "/tmp"]


def test_allow_read_entries_are_bound_once(home: Path, tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    missing = tmp_path / "missing"
    args = confiner(home=home, allow_read=(shared, shared, missing), programs=(shared,)).arguments(
        workspace=home / "project", roots=[]
    )
    assert pairs(args, "--ro-bind").count(str(shared)) == 1
    assert str(missing) not in args


# -- bounds ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("processes", "memory", "expected"),
    [
        (512, 16384, "ulimit -u 512 2>/dev/null; ulimit -v 16777216 2>/dev/null"),
        (7, 0, "ulimit -u 7 2>/dev/null"),
        (0, 1, "ulimit -v 1024 2>/dev/null"),
    ],
)
def test_process_and_memory_limits(processes: int, memory: int, expected: str) -> None:
    limited = confiner(max_processes=processes, max_memory_mb=memory).limited(SHELL)
    assert limited == ["/bin/bash", "-c", expected + '; exec "$0" "$@"', *SHELL]


def test_no_limits_or_a_short_command_line_is_left_alone() -> None:
    assert confiner(max_processes=0, max_memory_mb=0).limited(SHELL) == SHELL
    assert confiner().limited(["/bin/true", "x"]) == ["/bin/true", "x"]
    wrapped = confiner(max_processes=0, max_memory_mb=0).wrap(SHELL, workspace=Path("/"), roots=())
    assert wrapped[0] == "/usr/bin/bwrap" and wrapped[-4:] == ["--", *SHELL]


@pytest.mark.parametrize(
    ("features", "memory", "sized"),
    [
        (frozenset({"--size"}), 100, True),
        (frozenset({"--size"}), 0, False),
        (frozenset(), 100, False),
    ],
)
def test_tmpfs_size_bound(features: frozenset[str], memory: int, sized: bool) -> None:
    args = confiner(features=features, max_memory_mb=memory).arguments(
        workspace=Path("/"), roots=()
    )
    assert pairs(args, "--size") == ([str(memory * 1024 * 1024)] * 2 if sized else [])


def test_nested_user_namespaces_are_refused_where_bubblewrap_can() -> None:
    args = confiner(features=frozenset({"--disable-userns"})).arguments(
        workspace=Path("/"), roots=()
    )
    assert args[1:3] == ["--unshare-user", "--disable-userns"]
    assert "--disable-userns" not in confiner().arguments(workspace=Path("/"), roots=())


# -- program folders ------------------------------------------------------------------------------


def test_program_folders(home: Path, tmp_path: Path) -> None:
    tools = tmp_path / "tools" / "bin"
    tools.mkdir(parents=True)
    path = ":".join(
        [
            str(tools),
            str(tools),  # once only
            "relative/bin",  # not absolute: ignored
            "",
            "/",
            str(home),  # the home folder itself: never
            str(home.parent),  # above home: never
            "/usr/bin",  # a system folder: bound already
            str(home / ".pyenv" / "bin"),  # a toolchain: the whole of it
            str(tmp_path / "missing"),
        ]
    )
    found = program_folders(path, home)
    assert found[:2] == (tools, home / ".pyenv")
    assert Path("/") not in found and home not in found and home.parent not in found
    assert not any(str(p).startswith("/usr") for p in found)
    assert tmp_path / "missing" not in found


# -- choosing --------------------------------------------------------------------------------------


def test_off_runs_unconfined_and_says_it_was_asked_for() -> None:
    chosen = confinement_for(SandboxConfig(bash="off"))
    assert isinstance(chosen.confiner, NoConfiner)
    assert chosen.acknowledged is True and chosen.mode == "off"
    assert chosen.notice is not None and "NOT confined" in chosen.notice


@pytest.mark.parametrize("allow", [False, True])
def test_auto_without_bubblewrap_runs_unconfined_with_a_notice(allow: bool) -> None:
    chosen = confinement_for(
        SandboxConfig(allow_unconfined=allow), environ={"PATH": "/nonexistent"}
    )
    assert isinstance(chosen.confiner, NoConfiner)
    assert chosen.notice == "bash is NOT confined: bubblewrap (bwrap) is not installed"
    assert chosen.acknowledged is allow
    error = chosen.unattended_error("yolo mode")
    assert (error is None) is allow
    if error is not None:
        assert error.startswith("yolo mode runs shell commands without asking")


def test_bwrap_required_but_missing_refuses_every_command() -> None:
    chosen = confinement_for(SandboxConfig(bash="bwrap"), environ={"PATH": "/nonexistent"})
    assert isinstance(chosen.confiner, UnavailableConfiner)
    assert chosen.mode == "bwrap" and chosen.unattended_error("--yes") is None
    with pytest.raises(ConfinementError, match='bash = "bwrap"'):
        chosen.confiner.wrap(SHELL, workspace=Path("/"), roots=())


def test_unattended_error_only_for_unconfined_unacknowledged() -> None:
    confined = BashConfinement(confiner(), "auto")
    assert confined.unattended_error("--yes") is None
    accepted = BashConfinement(NoConfiner(), "auto", "bash is NOT confined", True)
    assert accepted.unattended_error("--yes") is None
    refused = BashConfinement(NoConfiner(), "auto", "bash is NOT confined", False)
    assert refused.unattended_error("--yes") is not None


# -- process bound helpers -------------------------------------------------------------------------


def test_no_cgroup_without_a_bound(tmp_path: Path) -> None:
    assert PidsCgroup.create(0, root=tmp_path) is None
    assert PidsCgroup.create(-1, root=tmp_path) is None


@pytest.mark.parametrize(
    ("events", "hit"),
    [("max 3\n", True), ("max 0\n", False), ("other 5\nmax 1\n", True), ("", False)],
)
def test_a_cgroup_says_when_its_bound_was_hit(tmp_path: Path, events: str, hit: bool) -> None:
    (tmp_path / "pids.events").write_text(events)
    assert PidsCgroup(tmp_path).hit_bound() is hit


def test_a_cgroup_joins_the_command_first(tmp_path: Path) -> None:
    argv = PidsCgroup(tmp_path).wrap(SHELL)
    assert argv[:2] == ["/bin/sh", "-c"] and argv[3] == str(tmp_path / "cgroup.procs")
    assert argv[4:] == SHELL


def test_process_count_of_something_that_is_not_a_sandbox_is_zero() -> None:
    assert sandbox_process_count(2**22 + 1) == 0


def test_a_chosen_confiner_cannot_be_changed_afterwards() -> None:
    c = confiner()
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.network = True  # type: ignore[misc]


# -- the probe -------------------------------------------------------------------------------------

BROKEN_BWRAP = "#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n"


@pytest.fixture
def broken_bwrap(tmp_path: Path) -> Iterator[Path]:
    """A ``bwrap`` on a PATH of its own that fails the way Ubuntu 24.04's does."""
    folder = tmp_path / "bin"
    folder.mkdir()
    fake = folder / "bwrap"
    fake.write_text(BROKEN_BWRAP)
    fake.chmod(0o755)
    yield fake
    for cache in (confinement._PROBES, confinement._PROBE_RESULTS, confinement._FEATURES):
        cache.pop(str(fake), None)


@pytest.mark.parametrize("started_early", [True, False], ids=["background", "on-demand"])
def test_a_bubblewrap_that_cannot_sandbox_is_reported_with_its_reason(
    broken_bwrap: Path, started_early: bool
) -> None:
    if started_early:
        start_bwrap_probe({"PATH": str(broken_bwrap.parent)})
        assert str(broken_bwrap) in confinement._PROBES
    problem = bwrap_problem(str(broken_bwrap))
    assert problem is not None
    assert "cannot create a sandbox here (bwrap: setting up uid map: Permission denied)" in problem
    assert str(broken_bwrap) not in confinement._PROBES
    assert bwrap_problem(str(broken_bwrap)) == problem  # remembered
    chosen = confinement_for(environ={"PATH": str(broken_bwrap.parent)})
    assert isinstance(chosen.confiner, NoConfiner) and chosen.notice is not None
    assert "cannot create a sandbox here" in chosen.notice


def test_no_probe_without_bubblewrap_on_path(tmp_path: Path) -> None:
    before = dict(confinement._PROBES)
    start_bwrap_probe({"PATH": str(tmp_path)})
    assert before == confinement._PROBES


# -- counting the processes of a sandbox ----------------------------------------------------------


def test_a_process_in_our_own_namespace_is_not_a_sandbox() -> None:
    """The count is of a separate PID namespace: children in ours count as none."""
    child = subprocess.Popen(["sleep", "30"])
    try:
        assert sandbox_process_count(os.getpid()) == 0
    finally:
        child.kill()
        child.wait()


needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None or not sys.platform.startswith("linux"),
    reason="bubblewrap (bwrap) is not installed; CI installs it",
)


def _count_with(tmp_path: Path, sleepers: int) -> int:
    real = os.path.realpath(shutil.which("bwrap") or "bwrap")
    if bwrap_problem(real) is not None:
        pytest.skip("bubblewrap cannot create a sandbox on this machine")
    work = tmp_path / f"w{sleepers}"
    work.mkdir()
    # ": > ready" is the shell's own: a touch could still be exiting when it is counted
    script = " ".join(["sleep 30 &"] * sleepers) + " : > ready; wait"
    argv = BwrapConfiner(real, features=bwrap_features(real)).wrap(
        ["/bin/sh", "-c", script], workspace=work, roots=[work]
    )
    proc = subprocess.Popen(argv)
    try:
        for _ in range(1200):  # until the sleepers run (a generous bound for a loaded machine)
            if (work / "ready").exists():
                break
            time.sleep(0.05)
        return sandbox_process_count(proc.pid)
    finally:
        proc.kill()
        proc.wait()


@needs_bwrap
def test_each_process_of_a_sandbox_counts_once(tmp_path: Path) -> None:
    one, three = _count_with(tmp_path, 1), _count_with(tmp_path, 3)
    assert one >= 2  # the sandbox's init and the sleeper at least
    assert three - one == 2


def test_closing_a_cgroup_kills_what_is_left_in_it(tmp_path: Path) -> None:
    import signal

    child = subprocess.Popen(["sleep", "30"])
    (tmp_path / "cgroup.procs").write_text(f"{child.pid}\n")
    PidsCgroup(tmp_path).close()  # a plain folder cannot be removed: it gives up after its tries
    assert child.wait(timeout=60) == -signal.SIGKILL


def test_a_bubblewrap_that_cannot_even_start_is_reported(broken_bwrap: Path) -> None:
    broken_bwrap.chmod(0o644)  # not executable: starting it fails
    problem = bwrap_problem(str(broken_bwrap))
    assert problem is not None and problem.startswith("bubblewrap could not start: ")
