"""A bash step that comes while the session's first snapshot runs in the background does not wait
for it when every file it can write is known (:mod:`reasonix.safety.snapshot_early`): it keeps
those files' bytes now, as a file tool's step does, and its snapshot is the background one with
them. Through the real CLI (``reasonix run``, stream-json): turn 1 is ``echo ... > notes.txt``
while the first snapshot of a repository is held until that write has happened (so the
background look sees the agent's bytes), turn 2 ``/rewind``: the user's bytes come back. The
control switches the kept bytes off inside the same run and the rewind leaves the agent's
bytes. A command whose writes are not all known waits for the snapshot, as before, and its
rewind is exact too."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from reasonix.safety.snapshot_early import exact_writes
from reasonix.testing import FakeDeepSeekServer, Reply
from reasonix.testing.project import fake_project_toml
from tests.support.cli import FAKE_KEY_ENV, cli_env
from tests.support.git_env import ISOLATED_GIT

USER = "the user's notes\n"
GIT_ENV = ISOLATED_GIT

#: ``reasonix run`` with the first background snapshot held until notes.txt changed (or
#: ``wait`` seconds passed): what it found goes to ``report``. ``control``: a step's kept bytes
#: are not laid over the background snapshot.
SHIM = f"""import pathlib, sys, threading, time
USER = {USER!r}
from reasonix.safety import checkpoints
target, report = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
wait, control = float(sys.argv[3]), sys.argv[4] == "control"
del sys.argv[1:5]
real = checkpoints._Store.snapshot
first = []
def held(self):
    if not first and threading.current_thread().name == "reasonix-snapshot":
        first.append(1)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and target.read_text() == USER:
            time.sleep(0.01)
        report.write_text("changed" if target.read_text() != USER else "unchanged")
    return real(self)
checkpoints._Store.snapshot = held
if control:
    checkpoints._Store.overlay = lambda self, base, images: self.commit(base)
from reasonix.cli.main import main
raise SystemExit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("echo done > notes.txt", ("notes.txt",)),
        ("cat a.txt b.txt > out/c.txt 2> err.log", ("out/c.txt", "err.log")),
        ("printf '%s\\n' x >> notes.txt", ("notes.txt",)),
        ("{ echo a; echo b; } > grouped.txt", ("grouped.txt",)),
        ("git status > status.txt", ("status.txt",)),
        ("echo x > linked.txt", None),  # a second link: the write changes another name
        ("echo x > through/f.txt", None),  # a folder that is a symlink
        ("echo x > ../outside.txt", None),
        ("echo x > through/../f.txt", None),  # the kernel takes `..` after the symlink
        ("echo x > out/../f.txt", None),  # any `..`: not read here
        ("echo x > /tmp/abs.txt", None),
        ("echo x > $OUT", None),
        ("echo x > *.txt", None),
        ("echo x > ~/f", None),
        ("echo x > out", None),  # a folder
        ("echo x > nested/f.txt", None),  # a repository of its own: snapshots skip it
        ("echo x > .git/f.txt", None),
        ("cd out && echo x > f.txt", None),
        ("python3 -c 'print(1)' > f.txt", None),
        ("echo x > f.txt; rm a.txt", None),
        ("sort -o sorted.txt a.txt > f.txt", None),
        ("tee copy.txt < a.txt > f.txt", None),
        ("echo $(date) > f.txt", None),
        ("echo x <> f.txt", None),
        ("ls", None),
    ],
)
def test_the_writes_a_bash_step_can_make_are_known_or_none(
    tmp_path: Path, command: str, expected: tuple[str, ...] | None
) -> None:
    ws = tmp_path / "ws"
    (ws / "out").mkdir(parents=True)
    for name in ("a.txt", "b.txt", "notes.txt"):
        (ws / name).write_text(name)
    os.link(ws / "a.txt", ws / "linked.txt")
    os.symlink("out", ws / "through")
    (ws / "nested" / ".git").mkdir(parents=True)
    (ws / ".git").mkdir()
    assert exact_writes(command, ws) == expected


def _git(root: Path, *args: str) -> None:
    env = {**os.environ, **GIT_ENV}
    subprocess.run(["git", *args], cwd=root, env=env, capture_output=True, check=True)


def _session(tmp_path: Path, command: str, *, control: bool, wait: float) -> tuple[str, str]:
    """Turn 1 runs ``command`` during the held first snapshot, turn 2 rewinds: (what the held
    snapshot found, the rewind's answer)."""
    ws, cfg = tmp_path / "ws", tmp_path / "cfg"
    (ws / "pkg").mkdir(parents=True)
    cfg.mkdir()
    for i in range(300):  # a repository: its first snapshot starts from its index
        (ws / "pkg" / f"m{i:03}.py").write_text(f"x = {i}\n")
    (ws / "notes.txt").write_text(USER)
    _git(ws, "init", "-q")
    _git(ws, "add", "-A")
    _git(ws, "commit", "-qm", "start")
    report = tmp_path / "report"
    with FakeDeepSeekServer() as ex:
        toml = fake_project_toml(ex.base_url, ex.base_url, key_env=FAKE_KEY_ENV, max_steps=5)
        (cfg / "config.toml").write_text(toml)
        ex.push(Reply.call("bash", {"command": command}), Reply.text("wrote the notes"))
        argv = ["run", "--no-planner", "--mode", "yolo", "--input-format", "stream-json"]
        argv += ["--output-format", "stream-json"]
        shim = [str(ws / "notes.txt"), str(report), str(wait), "control" if control else "-"]
        turns = "".join(json.dumps({"text": t}) + "\n" for t in ("write the notes", "/rewind"))
        proc = subprocess.run(
            [sys.executable, "-c", SHIM, *shim, *argv],
            cwd=ws,
            env=cli_env(tmp_path / "data", cfg, drop=("GIT_",)),
            input=turns,
            capture_output=True,
            text=True,
            timeout=300,  # a hang's bound on a loaded machine, not a timing claim
        )
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = [
        json.loads(line)["result"]
        for line in proc.stdout.splitlines()
        if line.startswith('{"type": "result"')
    ]
    assert len(results) == 2, proc.stdout[-2000:]
    return report.read_text(), str(results[1])


def test_a_known_bash_write_during_the_first_snapshot_is_rewound_exactly(tmp_path: Path) -> None:
    seen, answer = _session(
        tmp_path, "echo 'the agent was here' > notes.txt", control=False, wait=60
    )
    assert seen == "changed"  # the step did not wait: the snapshot looked after its write
    assert (tmp_path / "ws" / "notes.txt").read_text() == USER, answer


def test_control_without_the_kept_bytes_the_rewind_keeps_the_agents_write(tmp_path: Path) -> None:
    seen, answer = _session(
        tmp_path, "echo 'the agent was here' > notes.txt", control=True, wait=60
    )
    assert seen == "changed"
    assert (tmp_path / "ws" / "notes.txt").read_text() == "the agent was here\n", answer


def test_a_bash_write_not_known_waits_and_is_rewound_exactly(tmp_path: Path) -> None:
    command = "python3 -c \"open('notes.txt', 'w').write('the agent was here')\""
    seen, answer = _session(tmp_path, command, control=True, wait=3)
    assert seen == "unchanged"  # the step waited for the snapshot (held for 3 s, then taken)
    assert (tmp_path / "ws" / "notes.txt").read_text() == USER, answer
