"""attacker6 B6: a bash step that comes during the first background snapshot does not wait when
every file it writes is known (snapshot_early.exact_writes, 5f00e79), but the name it records is
``os.path.normpath`` of the redirection's word: ``link/../m000.py`` becomes ``m000.py`` while
bash resolves ``link`` (a symlink the repository holds, ``link -> pkg/sub``) first and writes
``pkg/m000.py``. The step keeps the bytes of a file it never wrote; the held background
snapshot looks after the write and records the agent's bytes as the user's, so ``/rewind``
leaves ``pkg/m000.py`` as the agent wrote it. Control: the same write by its plain name
``pkg/m000.py`` is rewound exactly (what seed32's own test proves).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from reasonix.testing import FakeDeepSeekServer, Reply
from reasonix.testing.project import fake_project_toml
from tests.support.cli import FAKE_KEY_ENV, cli_env
from tests.support.git_env import ISOLATED_GIT

pytestmark = [pytest.mark.slow]

USER = "x = 0\n"
GIT_ENV = ISOLATED_GIT

#: ``reasonix run`` with the first background snapshot held until the target changed (or 60 s):
#: the snapshot then looks after the step's write, as on a large repository.
SHIM = f"""import pathlib, sys, threading, time
USER = {USER!r}
from reasonix.safety import checkpoints
target, report = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
del sys.argv[1:3]
real = checkpoints._Store.snapshot
first = []
def held(self):
    if not first and threading.current_thread().name == "reasonix-snapshot":
        first.append(1)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and target.read_text() == USER:
            time.sleep(0.01)
        report.write_text("changed" if target.read_text() != USER else "unchanged")
    return real(self)
checkpoints._Store.snapshot = held
from reasonix.cli.main import main
raise SystemExit(main(sys.argv[1:]))
"""


def _session(tmp_path: Path, command: str) -> tuple[str, str]:
    ws, cfg = tmp_path / "ws", tmp_path / "cfg"
    (ws / "pkg" / "sub").mkdir(parents=True)
    cfg.mkdir()
    for i in range(300):
        (ws / "pkg" / f"m{i:03}.py").write_text(f"x = {i}\n")
    (ws / "pkg" / "sub" / "keep.py").write_text("pass\n")
    os.symlink("pkg/sub", ws / "link")  # a symlink the hostile repository holds
    env = {**os.environ, **GIT_ENV}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "start"]):
        subprocess.run(["git", *args], cwd=ws, env=env, capture_output=True, check=True)
    report = tmp_path / "report"
    with FakeDeepSeekServer() as ex:
        toml = fake_project_toml(ex.base_url, ex.base_url, key_env=FAKE_KEY_ENV, max_steps=5)
        (cfg / "config.toml").write_text(toml)
        ex.push(Reply.call("bash", {"command": command}), Reply.text("done"))
        argv = ["run", "--no-planner", "--mode", "yolo", "--input-format", "stream-json"]
        argv += ["--output-format", "stream-json"]
        turns = "".join(json.dumps({"text": t}) + "\n" for t in ("edit m000", "/rewind"))
        proc = subprocess.run(
            [sys.executable, "-c", SHIM, str(ws / "pkg" / "m000.py"), str(report), *argv],
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


def test_break_a_write_through_a_symlinks_parent_is_rewound(tmp_path: Path) -> None:
    # The fix makes this step wait for the snapshot (a `..` word is not a known write), so the
    # snapshot looks before the write ("unchanged"); either way the rewind must undo it.
    seen, answer = _session(tmp_path, "echo 'the agent' > link/../m000.py")
    assert seen in ("changed", "unchanged"), seen
    text = (tmp_path / "ws" / "pkg" / "m000.py").read_text()
    assert text == USER, f"the rewind ({answer!r}) left {text!r}"


def test_control_the_same_write_by_its_plain_name_is_rewound(tmp_path: Path) -> None:
    seen, answer = _session(tmp_path, "echo 'the agent' > pkg/m000.py")
    assert seen == "changed"
    assert (tmp_path / "ws" / "pkg" / "m000.py").read_text() == USER, answer
