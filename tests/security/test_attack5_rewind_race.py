"""attacker5 B9: a rewind checks that the folders on a file's path are real folders, then writes
the file by its path: a process of the agent's that swaps a folder for a symlink in between makes
the rewind (on the host, unconfined) write the file outside the workspace.

snapshot_restore.py ``_write``: ``_unsafe_parent`` lstat()s each folder, then ``_place`` makes
the temporary file with ``mkstemp(dir=folder)`` and ``os.replace``s it by path; both resolve the
folder again. Here the agent's background job (turn 1, so a rewind of turn 2 leaves it running)
swaps ``src`` with a symlink to a folder outside the workspace (``renameat2(RENAME_EXCHANGE)``,
so ``src`` is always one of the two) once the rewind's writes begin (it changed nothing before,
so the rewind restores the files rather than leave them alone as "changed while a job ran"). Some
of them are written into the outside folder. (attacker5 B1's persistent init races
the same way without any job.) Control: the same rewind without the swap writes every file back
into ``src`` and nothing outside.

Fixed by the restorer writing relative to folder descriptors opened with ``O_NOFOLLOW`` from the
workspace root down (``test_rewind_folder_fds.py`` is the deterministic check).
"""

from __future__ import annotations

import platform
import shlex
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from reasonix.testing import FakeDeepSeekServer, Reply
from reasonix.testing.project import fake_project_toml
from tests.support.cli import FAKE_KEY_ENV, cli_env
from tests.support.stream_json import StreamJsonRun

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing"),
    pytest.mark.skipif(platform.machine() != "x86_64", reason="renameat2's x86-64 number"),
]

FILES = [f"src/f{i:04}.py" for i in range(2000)]

#: The job: each time ``go`` appears, waits for the rewind's first write, then swaps ``src`` and
#: ``lnk`` (a symlink to OUT) atomically, over and over, until ``go`` goes; then leaves ``src`` a
#: folder and says ``paused``.
SWAP = """import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
OUT, swap = sys.argv[1], sys.argv[2] == "swap"
while True:
    while not os.path.exists("go"):
        time.sleep(0.01)
    while not open("src/f0000.py").read().startswith("# the user"):
        pass  # on the CPU, not asleep, when the rewind starts writing
    if swap:  # made now: a link the rewind finds first is removed as created since
        os.symlink(OUT, "lnk")
    n = 0
    while swap and os.path.exists("go"):
        for _ in range(1000):
            libc.syscall(316, -100, b"src", -100, b"lnk", 2)  # renameat2(..., RENAME_EXCHANGE)
            n += 1
    if n % 2:
        libc.syscall(316, -100, b"src", -100, b"lnk", 2)
    if swap:
        os.unlink("lnk")
    open("paused", "w").close()
    while os.path.exists("paused"):
        time.sleep(0.01)
"""


@dataclass
class Work:
    root: Path
    outside: Path
    env: dict[str, str]
    ex: FakeDeepSeekServer


@pytest.fixture
def work(tmp_path: Path) -> Iterator[Work]:
    root, cfg, outside = tmp_path / "w", tmp_path / "cfg", tmp_path / "outside"
    (root / "src").mkdir(parents=True)
    cfg.mkdir()
    outside.mkdir()
    for i, name in enumerate(FILES):
        # 4 KB each: the longer a write takes, the likelier a swap falls inside it
        (root / name).write_text(f"# the user's file {i}\n" + "#" * 4096 + "\n")
    (root / "swap.py").write_text(SWAP)
    with FakeDeepSeekServer() as ex:
        text = fake_project_toml(ex.base_url, ex.base_url, key_env=FAKE_KEY_ENV, max_steps=5)
        (cfg / "config.toml").write_text(text)
        yield Work(root, outside, cli_env(tmp_path / "data", cfg), ex)


#: Rewinds tried in one session: the race needs the job on the other core while the rewind
#: writes, so on a loaded machine (load 15 on 2 cores here) some rewinds miss it; the first write
#: outside ends the attempts (usually the first or second), and only a run that misses all of
#: them pays for all 40.
ATTEMPTS = 40


def _rewind_with_job(w: Work, how: str, attempts: int = ATTEMPTS) -> str:
    job = f"python3 swap.py {shlex.quote(str(w.outside))} {how}"
    edit = "for f in src/*.py; do echo '# the agent' > $f; done"
    w.ex.push(Reply.call("bash", {"command": job, "run_in_background": True}), Reply.text("ok"))
    for _ in range(attempts):
        w.ex.push(Reply.call("bash", {"command": edit}), Reply.text("edited"))
    answer = ""
    with StreamJsonRun(w.root, w.env) as run:
        run.turn("start the watcher")
        for _ in range(attempts):
            run.turn("edit the files")
            (w.root / "go").write_text("")
            answer = run.turn("/rewind")
            (w.root / "go").unlink()
            _wait_for(w.root / "paused")
            (w.root / "paused").unlink()
            if any(w.outside.iterdir()):
                break
    return answer


def _wait_for(path: Path) -> None:
    deadline = time.monotonic() + 60  # a hang's bound on a loaded machine, not a timing claim
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} never came"
        time.sleep(0.02)


def test_break_a_rewind_never_writes_outside_the_workspace(work: Work) -> None:
    answer = _rewind_with_job(work, "swap")
    outside = sorted(p.name for p in work.outside.iterdir())
    assert outside == [], f"the rewind wrote {outside} outside the workspace: {answer[:500]}"


def test_control_without_the_swap_every_file_comes_back_into_src(work: Work) -> None:
    answer = _rewind_with_job(work, "none", attempts=1)
    assert list(work.outside.iterdir()) == [], answer
    assert all((work.root / n).read_text().startswith("# the user") for n in FILES), answer
