"""attacker4 B20 (fixed by fix5): the proof that a command only reads trusted PATH. A bare
program name (``cat``) runs whatever the command's PATH finds first, and PATH may hold a folder
of the workspace (an activated ``.venv/bin``, direnv's ``PATH_add bin``, ``node_modules/.bin``)
or a relative one (``bin``): the repository's own ``bin/cat`` then ran unasked in ask mode.

Now a program is proved only when the file PATH finds lies outside the workspace (and its added
folders) with no relative entry before it. Through the real CLI, ask mode, headless: the call is
refused (exit 3) and the planted program never runs. Controls: with the check switched off in the
same process (``_path_obstacle`` made to find nothing) the same line runs unasked and the plant
appears, so the probe sees the break; with PATH holding no workspace folder, ``cat`` is still
proved and runs unasked.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from reasonix.safety.shell import readers
from reasonix.testing import Reply
from tests.security.support import Attack, Lab, lab

__all__ = ["lab"]

pytestmark = pytest.mark.slow

#: A reader's name the repository ships: it plants a file, then reads like cat.
FAKE_CAT = '#!/bin/sh\ntouch "$PWD/PLANTED"\nexec /bin/cat "$@"\n'

UNCHECKED = (
    "import sys\n"
    "from reasonix.safety.shell import readers\n"
    "readers._path_obstacle = lambda *args, **kwargs: None\n"
    "from reasonix.cli.main import main\n"
    "raise SystemExit(main(sys.argv[1:]))\n"
)

CALL = {"command": "cat README.md"}


def _plant(lab: Lab) -> None:
    (lab.root / "README.md").write_text("# the project\n")
    cat = lab.root / "bin" / "cat"
    cat.parent.mkdir()
    cat.write_text(FAKE_CAT)
    cat.chmod(0o755)


def _path(lab: Lab, entry: str) -> str:
    return f"{entry}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}"


@pytest.mark.parametrize("entry", ["absolute", "relative"])
def test_a_workspace_program_on_path_is_not_proved_read_only(lab: Lab, entry: str) -> None:
    _plant(lab)
    folder = str(lab.root / "bin") if entry == "absolute" else "bin"
    outcome = lab.attack([Attack("cat", "bash", CALL)], env=lab.env(PATH=_path(lab, folder)))
    assert outcome.proc.returncode == 3, outcome.proc.stdout[-2000:] + outcome.proc.stderr
    assert not (lab.root / "PLANTED").exists()


def test_control_with_the_check_off_the_workspace_program_runs_unasked(lab: Lab) -> None:
    _plant(lab)
    lab.ex.push(Reply.call("bash", CALL), Reply.text("done"))
    proc = subprocess.run(
        [sys.executable, "-c", UNCHECKED, "run", "--no-planner", "--output-format", "json", "x"],
        cwd=lab.root,
        env=lab.env(PATH=_path(lab, str(lab.root / "bin"))),
        capture_output=True,
        text=True,
        timeout=300,  # a hang's bound on a loaded machine
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    assert (lab.root / "PLANTED").exists()
    assert "the project" in json.dumps(lab.ex.requests[-1].messages[-1])


def test_control_with_no_workspace_folder_on_path_cat_is_proved(lab: Lab) -> None:
    _plant(lab)
    outcome = lab.attack([Attack("cat", "bash", CALL)])
    assert outcome.proc.returncode == 0, outcome.proc.stdout[-2000:]
    assert "the project" in outcome.results[0]
    assert not (lab.root / "PLANTED").exists()


def test_the_path_lookup_follows_links_and_knows_builtins_and_added_folders(tmp_path: Path) -> None:
    ws, added, outside = tmp_path / "ws", tmp_path / "added", tmp_path / "outside"
    for folder in (ws / "bin", added / "bin", outside / "bin"):
        folder.mkdir(parents=True)
    for folder in (ws / "bin", added / "bin", outside / "bin"):
        (folder / "cat").write_text(FAKE_CAT)
        (folder / "cat").chmod(0o755)
    (outside / "linked").symlink_to(ws / "bin")
    folders = (ws.resolve(), added.resolve())
    assert readers._path_obstacle("cat", folders, str(outside / "bin")) is None
    assert readers._path_obstacle("cat", folders, str(outside / "linked"))  # a link into it
    assert readers._path_obstacle("cat", folders, str(added / "bin"))
    assert readers._path_obstacle("cat", folders, f"{outside / 'bin'}{os.pathsep}bin") is None
    assert readers._path_obstacle("cat", folders, f"bin{os.pathsep}{outside / 'bin'}")
    assert readers._path_obstacle("echo", folders, "bin") is None  # the shell's own
    assert readers._path_obstacle("nosuchprogram", folders, str(outside / "bin")) is None
