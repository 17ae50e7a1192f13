"""Never lose work: what a scripted model destroys through the real CLI (``reasonix run --yes``)
comes back byte for byte with ``reasonix rewind``, in a git repository (committed, modified,
untracked and ignored files) and in a plain folder, and the user's ``.git`` gains nothing from
us: no ref, no object. Git hooks and fsmonitor planted in the repository never run during our
snapshots; the controls prove the probes would see them run."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from reasonix.app.environment import without_environment
from reasonix.testing import FakeDeepSeekServer, Reply
from reasonix.testing.project import fake_project_toml
from tests.support.cli import FAKE_KEY_ENV, cli_env, run_cli

KEY_ENV = FAKE_KEY_ENV
GIT_ENV = {
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
}

Digest = dict[str, tuple[int, str]]


@dataclass
class World:
    """A workspace, private data and config folders, and one fake model server."""

    root: Path
    data: Path
    config: Path
    ex: FakeDeepSeekServer

    def env(self) -> dict[str, str]:
        return cli_env(self.data, self.config, drop=("GIT_",))

    def reasonix(self, *args: str) -> subprocess.CompletedProcess[str]:
        return run_cli(args, cwd=self.root, env=self.env())

    def git(self, *args: str) -> str:
        out = subprocess.run(
            ["git", *args],
            cwd=self.root,
            env={**os.environ, **GIT_ENV},
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        return out.stdout

    def run_commands(self, *commands: str, cont: bool = False) -> subprocess.CompletedProcess[str]:
        """One headless turn in which the model runs ``commands`` with bash, one per step
        (``cont``: a further turn of the last session)."""
        for command in commands:
            self.ex.push(Reply.call("bash", {"command": command}))
        self.ex.push(Reply.text("Done."))
        flags = ["-c"] if cont else []
        proc = self.reasonix("run", *flags, "--yes", "--no-planner", "clean up the workspace")
        assert proc.returncode == 0, proc.stderr
        return proc


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    root = tmp_path / "work"
    root.mkdir()
    with FakeDeepSeekServer() as ex:
        w = World(root, tmp_path / "data", tmp_path / "config", ex)
        w.config.mkdir()
        toml = fake_project_toml(ex.base_url, ex.base_url, key_env=KEY_ENV, max_steps=12)
        (w.config / "config.toml").write_text(toml)
        yield w


def digest(root: Path) -> Digest:
    """Every file and symlink below ``root`` but ``.git``: full mode and a hash of the bytes."""
    out: Digest = {}
    for folder, dirs, files in os.walk(root):
        if Path(folder) == root and ".git" in dirs:
            dirs.remove(".git")
        links = [d for d in dirs if os.path.islink(os.path.join(folder, d))]
        for name in files + links:
            path = os.path.join(folder, name)
            st = os.lstat(path)
            if os.path.islink(path):
                data = os.readlink(path).encode()
            else:
                with open(path, "rb") as fh:
                    data = fh.read()
            out[os.path.relpath(path, root)] = (st.st_mode, hashlib.sha256(data).hexdigest())
    return out


def populate(root: Path) -> None:
    """Files of every kind: text, CRLF, binary, executable, private, symlink, nested."""
    (root / "a.txt").write_bytes(b"alpha\n")
    (root / "lib").mkdir()
    (root / "lib" / "b.py").write_bytes(b"def b():\r\n    return 1\r\n")
    (root / "data.bin").write_bytes(bytes(range(256)) * 4)
    (root / "run.sh").write_bytes(b"#!/bin/sh\necho hi\n")
    (root / "run.sh").chmod(0o755)
    os.symlink("a.txt", root / "link-to-a")


def make_repo(w: World) -> None:
    root = w.root
    w.git("init", "-q")
    populate(root)
    (root / ".gitignore").write_text(".env\nlocal/\n")
    (root / ".gitattributes").write_text("*.py text eol=lf\n")
    w.git("add", "-A")
    w.git("commit", "-qm", "initial")
    (root / "a.txt").write_bytes(b"alpha\nmodified, not committed\n")
    (root / "notes.txt").write_text("untracked notes\n")
    (root / ".env").write_text("API_TOKEN=do-not-leak-1234\n")
    (root / ".env").chmod(0o600)
    (root / "local").mkdir()
    (root / "local" / "state.db").write_bytes(b"\x00ignored local data\x00")


def git_state(w: World) -> tuple[str, str, str]:
    """Refs, the object count and the list of every object in the user's repository."""
    return (
        w.git("for-each-ref"),
        w.git("count-objects", "-v"),
        w.git("cat-file", "--batch-all-objects", "--batch-check"),
    )


DESTROY_IN_GIT = {
    "rm-everything": "GLOBIGNORE=.git; rm -rf * .[!.]*",
    "reset-hard": "git reset -q --hard",
    "clean-fdx": "git clean -q -fdx",
    "checkout-dot": "git checkout -- .",
    "truncate": ": > a.txt",
    "rename": "mv a.txt b.txt",
    "chmod": "chmod -x run.sh",
}


@pytest.mark.slow
@pytest.mark.parametrize("command", DESTROY_IN_GIT.values(), ids=DESTROY_IN_GIT.keys())
def test_rewind_undoes_destruction_in_a_git_repository(world: World, command: str) -> None:
    make_repo(world)
    before = digest(world.root)
    git_before = git_state(world)

    world.run_commands(command)
    assert digest(world.root) != before, "the command destroyed nothing: the probe is blind"

    proc = world.reasonix("rewind")
    assert proc.returncode == 0, proc.stderr
    assert "Files put back to before turn 1" in proc.stdout
    assert digest(world.root) == before
    assert git_state(world) == git_before
    assert "refs/reasonix" not in world.git("for-each-ref")


@pytest.mark.slow
def test_rewind_undoes_destruction_in_a_plain_folder(world: World) -> None:
    populate(world.root)
    (world.root / ".env").write_text("SECRET=1\n")
    (world.root / ".env").chmod(0o600)
    (world.root / "deep" / "er").mkdir(parents=True)
    (world.root / "deep" / "er" / "c.txt").write_text("deep\n")
    before = digest(world.root)

    world.run_commands(": > a.txt", "mv lib/b.py lib/renamed.py", "chmod -x run.sh")
    after_three = digest(world.root)
    world.run_commands("rm -rf * .[!.]*", cont=True)
    assert digest(world.root) == {}, "the workspace should be empty now"

    # The last step only: back to the state the first turn left.
    proc = world.reasonix("rewind", "--steps", "1")
    assert proc.returncode == 0, proc.stderr
    assert digest(world.root) == after_three
    assert "Recreated" in proc.stdout and "deep/er/c.txt" in proc.stdout

    proc = world.reasonix("rewind", "--turn", "1")
    assert proc.returncode == 0, proc.stderr
    assert digest(world.root) == before
    assert "lib/renamed.py -> lib/b.py" in proc.stdout
    assert "run.sh" in proc.stdout  # the permissions that came back


@pytest.mark.slow
def test_rewind_cuts_the_conversation_so_the_session_continues_from_there(world: World) -> None:
    populate(world.root)
    world.run_commands("rm a.txt")
    world.ex.push(Reply.text("second answer"))
    assert world.reasonix("run", "-c", "--yes", "--no-planner", "second task").returncode == 0
    proc = world.reasonix("rewind", "--turn", "1")
    assert proc.returncode == 0, proc.stderr
    assert (world.root / "a.txt").read_bytes() == b"alpha\n"
    world.ex.push(Reply.text("fresh"))
    assert world.reasonix("run", "-c", "--yes", "--no-planner", "again").returncode == 0
    # (the first user message carries the environment facts after the user's words)
    sent = [without_environment(str(m.get("content"))) for m in world.ex.last_request.messages]
    assert "again" in sent
    assert "clean up the workspace" not in sent and "second task" not in sent

    bad = world.reasonix("rewind", "--turn", "7")
    assert bad.returncode == 2 and "no turn 7" in bad.stderr


@pytest.mark.slow
def test_planted_fsmonitor_and_reference_transaction_hook_never_run(world: World) -> None:
    make_repo(world)
    marker = world.root.parent / "markers"
    marker.mkdir()
    probe = world.root.parent / "probe.sh"
    probe.write_text(f'#!/bin/sh\necho "$0 $*" >> {marker}/ran\nexit 1\n')
    probe.chmod(0o755)
    world.git("config", "core.fsmonitor", str(probe))
    hook = world.root / ".git" / "hooks" / "reference-transaction"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text(f"#!/bin/sh\necho hook >> {marker}/ran\nexit 0\n")
    hook.chmod(0o755)
    for name in ("post-index-change", "pre-commit", "post-commit"):
        other = hook.parent / name
        other.write_text(hook.read_text())
        other.chmod(0o755)

    world.ex.push(Reply.call("write_file", {"path": "new.txt", "content": "new\n"}))
    world.run_commands("rm notes.txt")
    assert world.reasonix("rewind").returncode == 0
    assert not (world.root / "new.txt").exists()
    assert (world.root / "notes.txt").read_text() == "untracked notes\n"
    assert not (marker / "ran").exists(), (marker / "ran").read_text()

    # Control: the user's own git does run them, so the probe can see a run.
    world.git("update-ref", "refs/heads/probe", "HEAD")
    subprocess.run(["git", "status"], cwd=world.root, env={**os.environ, **GIT_ENV}, check=False)
    ran = (marker / "ran").read_text()
    assert "hook" in ran and str(probe) in ran


@pytest.mark.slow
def test_snapshots_live_in_a_private_store_never_in_the_repository(world: World) -> None:
    make_repo(world)
    world.run_commands("rm .env")
    stores = list((world.data / "checkpoints").iterdir())
    assert len(stores) == 1
    for path in [world.data / "checkpoints", stores[0], stores[0] / "git"]:
        assert path.stat().st_mode & 0o777 == 0o700
    # The ignored secret is recoverable from our store only: the user's objects never saw it.
    assert world.reasonix("rewind").returncode == 0
    assert (world.root / ".env").read_text() == "API_TOKEN=do-not-leak-1234\n"
    objects = world.git("cat-file", "--batch-all-objects", "--batch-check").split()
    secret_blob = world.git("hash-object", ".env").strip()
    assert secret_blob not in objects


@pytest.mark.slow
def test_undo_and_rewind_in_the_interactive_app(world: World) -> None:
    import pexpect

    make_repo(world)
    before = digest(world.root)
    ex = world.ex
    ex.push(Reply.call("bash", {"command": "rm notes.txt"}), Reply.text("Removed the notes."))
    ex.push(
        Reply.call("write_file", {"path": "new.txt", "content": "new\n"}),
        Reply.call("bash", {"command": "mv a.txt b.txt"}),
        Reply.text("Renamed it."),
    )
    ex.push(
        Reply.call("bash", {"command": "kubectl delete namespace prod"}),
        Reply.text("Left the cluster alone."),
    )
    env = {**world.env(), "PROMPT_TOOLKIT_NO_CPR": "1", "TERM": "xterm-256color"}
    child = pexpect.spawn(
        sys.executable,
        ["-m", "reasonix", "--mode", "yolo", "--no-planner"],
        cwd=str(world.root),
        env=env,
        encoding="utf-8",
        timeout=30,
        dimensions=(40, 160),
    )
    try:
        child.expect("›")
        child.sendline("remove the notes")
        child.expect("Removed the notes.")
        child.expect("›")
        child.sendline("rename a")
        child.expect("Renamed it.")
        child.expect("›")
        assert (world.root / "b.txt").exists() and (world.root / "new.txt").exists()

        child.sendline("/undo")
        child.expect("Moved back b.txt -> a.txt")
        child.expect("›")
        assert (world.root / "a.txt").exists() and not (world.root / "b.txt").exists()
        assert (world.root / "new.txt").exists()  # the step before it stays

        child.sendline("/rewind 1")
        child.expect("Files put back to before turn 1")
        child.expect("Recreated notes.txt")
        child.expect("›")
        assert digest(world.root) == before

        # Yolo approves everything, except what no snapshot can undo: that still asks.
        child.sendline("clean the cluster")
        child.expect("no snapshot can undo it")
        child.expect(r"\?")
        child.sendline("n")
        child.expect("Left the cluster alone.")
        child.expect("›")
        child.sendline("/exit")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    sent = ex.requests[-1].messages
    assert any("declined" in str(m.get("content")) for m in sent if m.get("role") == "tool")


@pytest.mark.slow
def test_doctor_shows_the_size_of_the_snapshot_store(world: World) -> None:
    populate(world.root)
    assert "snapshots: 0.0 MB for 0 folder(s)" in world.reasonix("doctor").stdout
    world.run_commands("rm a.txt")
    out = world.reasonix("doctor").stdout
    assert "for 1 folder(s)" in out and "pruned after 14 days" in out, out
