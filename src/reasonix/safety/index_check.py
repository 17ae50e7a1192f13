"""Index entries a confined call changed so that git no longer looks at a file (used by
:class:`reasonix.safety.plants.CreationGuard`).

A command may rewrite ``.git/index`` so that an entry stages bytes the work-tree file does not
hold under that file's own stat data (attacker5 B3), keeps the committed blob under the stat
data of a file it changed (attacker6 B2), or sets an assume-unchanged or skip-worktree bit over
a changed file. ``git diff`` and ``git status`` then show nothing, and the user's next commit
takes, or leaves out, bytes no one saw. :func:`unmask` finds the entries the call changed (the
index's bytes before the call against after it, read here: about 40 ms for 50,000 entries, and
each version of an index is read once), hashes the files of those git would take on trust, and
gives each lying entry back to git's judgement: its bits and stat data are cleared
(``update-index --index-info``), so git compares the file again and shows the difference."""

from __future__ import annotations

import contextlib
import os
import re
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Protocol

from reasonix.safety.git_repository import config_entries, read_config, user_config_files

#: How coarse file times may be (the kernel's clock tick, at most 10 ms).
TICK_NS = 10_000_000
#: The largest index kept whole before a call (a 50,000-file repository's is about 4 MB).
_MAX_INDEX = 64 << 20

Records = dict[bytes, bytes]  # an index's stage-0 entries: name -> fixed part (stat, id, flags)


class _Git(Protocol):
    def __call__(self, root: Path, *args: str, stdin: bytes = b"") -> bytes: ...


@dataclass
class Before:
    """A root's index as it was when the call began: its entries (read before, or now from the
    bytes kept), or None when there was no index this reads."""

    records: Records | None = None
    data: bytes | None = None

    def entries(self) -> Records | None:
        if self.records is None and self.data is not None:
            self.records = records_of(self.data)
        return self.records


#: Each root's last index read: (its stat, its entries), so an index is parsed once.
_READ: dict[Path, tuple[tuple[int, int, int, int], Records]] = {}


def before(root: Path) -> Before:
    """The index of ``root`` before a call: known entries when this version was read already,
    else its bytes (parsed only if the call writes the index)."""
    with contextlib.suppress(OSError), _opened(root) as fh:
        key = _key(os.fstat(fh.fileno()))
        known = _READ.get(root)
        if known is not None and known[0] == key:
            return Before(records=known[1])
        data = fh.read(_MAX_INDEX + 1)
        return Before(data=data if len(data) <= _MAX_INDEX else None)
    return Before()


def _opened(root: Path) -> BinaryIO:
    """The index as git opens it (through a symlink too), never blocking (a command may have
    put a FIFO there); OSError when it is not a regular file."""
    fd = os.open(root / ".git" / "index", os.O_RDONLY | os.O_NONBLOCK)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(f"{root}/.git/index is not a regular file")
    return os.fdopen(fd, "rb")


def _key(info: os.stat_result) -> tuple[int, int, int, int]:
    return (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def _after(root: Path) -> Records | None:
    """The index's entries now (None when this does not read them); OSError without one."""
    with _opened(root) as fh:
        info = os.fstat(fh.fileno())
        data = fh.read(_MAX_INDEX + 1)
    records = records_of(data) if len(data) <= _MAX_INDEX else None
    if records is not None and info.st_ctime_ns < time.time_ns() - TICK_NS:
        _READ[root] = (_key(info), records)  # settled: a write now would change its ctime
    return records


def records_of(data: bytes) -> Records | None:
    """The stage-0 entries of an index's bytes (versions 2 to 4); None when the bytes are no
    index this reads (a split index keeps most entries in another file)."""
    if (
        len(data) < 32
        or data[:4] != b"DIRC"
        or data[4:8] not in (b"\0\0\0\2", b"\0\0\0\3", b"\0\0\0\4")
    ):
        return None
    count = int.from_bytes(data[8:12], "big")
    try:
        records, pos = (_v4 if data[7] == 4 else _v2)(data, count)
    except IndexError:
        return None
    return None if b"link" in _extensions(data, pos) else records


def _v2(data: bytes, count: int) -> tuple[Records, int]:
    records: Records = {}
    pos, find = 12, data.find
    for _ in range(count):
        flags = (data[pos + 60] << 8) | data[pos + 61]
        fixed = 64 if flags & 0x4000 else 62
        size = flags & 0xFFF
        end = pos + fixed + size if size < 0xFFF else find(b"\0", pos + fixed)
        if not flags & 0x3000:
            records[data[pos + fixed : end]] = data[pos : pos + fixed]
        pos += (end - pos + 8) & ~7
    return records, pos


def _v4(data: bytes, count: int) -> tuple[Records, int]:
    """Version 4 names are compressed against the previous one (a varint of bytes to drop)."""
    records: Records = {}
    pos, name, find = 12, b"", data.find
    for _ in range(count):
        flags = (data[pos + 60] << 8) | data[pos + 61]
        fixed = 64 if flags & 0x4000 else 62
        at = pos + fixed
        byte = data[at]
        strip, at = byte & 0x7F, at + 1
        while byte & 0x80:
            byte = data[at]
            strip, at = ((strip + 1) << 7) | (byte & 0x7F), at + 1
        end = find(b"\0", at)
        name = name[: len(name) - strip] + data[at:end]
        if not flags & 0x3000:
            records[name] = data[pos : pos + fixed]
        pos = end + 1
    return records, pos


def _extensions(data: bytes, pos: int) -> list[bytes]:
    names = []
    while pos + 8 <= len(data) - 20:
        names.append(data[pos : pos + 4])
        pos += 8 + int.from_bytes(data[pos + 4 : pos + 8], "big")
    return names


def unmask(root: Path, was: Before, git: _Git) -> list[str]:
    """Give back to git's judgement the entries of ``root``'s index the call changed that hide
    a difference from their file; their paths. Without the index as it was, every entry counts
    as changed; without a readable index now, nothing is judged (git reads no such index
    either)."""
    try:
        now = _after(root)
    except OSError:
        return []  # no index, or none git can read (a FIFO): nothing git takes on trust
    old = was.entries() or {}
    if now is None:  # a split index, or one of a version this does not read: git reads it
        now, old = _listed(root, git), {}
    hidden = [n for n, head in now.items() if old.get(n) != head and _hides(root, n, head)]
    if not hidden:
        return []
    forged = [n for n, real in hashes_of(root, hidden, git) if real != _sha(now[n])]
    if not forged:
        return []
    flagged = b"".join(n + b"\0" for n in forged if _bits(now[n]))
    if flagged:
        git(root, "update-index", "-z", "--no-assume-unchanged", "--no-skip-worktree", "--stdin",
            stdin=flagged)  # fmt: skip
    info = b"".join(b"%o %s 0\t%s\0" % (_mode(now[n]), _sha(now[n]).encode(), n) for n in forged)
    git(root, "update-index", "-z", "--index-info", stdin=info)
    drivers = _filter_drivers(root)
    return [
        os.fsdecode(n) for n in forged if not drivers or _filter_of(root, n, git) not in drivers
    ]


def _filter_drivers(root: Path) -> set[str]:
    """The filter drivers git's configuration (the repository's, the user's, the system's)
    defines with a program (git-lfs: the staged bytes are the filter's, not the file's; such an
    entry's stat data is cleared all the same, which costs git one look)."""
    names = set()
    for path in (root / ".git" / "config", *user_config_files()):
        for key, _ in config_entries(read_config(path) or ""):
            section, _, rest = key.partition(".")
            driver, _, what = rest.rpartition(".")
            if section == "filter" and driver and what in ("clean", "process"):
                names.add(driver)
    return names


def _filter_of(root: Path, name: bytes, git: _Git) -> str:
    """The filter driver the file's attributes name ("" for none)."""
    out = git(root, "check-attr", "-z", "filter", "--", os.fsdecode(name)).split(b"\0")
    value = out[2].decode(errors="replace") if len(out) > 2 else "unspecified"
    return "" if value in ("unspecified", "unset", "set") else value


def hashes_of(root: Path, names: list[bytes], git: _Git) -> list[tuple[bytes, str]]:
    """Each file's blob id as git would store it without filters ("" when it cannot be read).
    ``--stdin-paths`` reads one name a line and unquotes a name that starts with a quote, so
    such names are hashed one at a time, by argument."""
    plain = [n for n in names if b"\n" not in n and not n.startswith(b'"')]
    listed = b"".join(n + b"\n" for n in plain)
    hashes = git(root, "hash-object", "--no-filters", "--stdin-paths", stdin=listed).split()
    if len(hashes) != len(plain):
        hashes = [b""] * len(plain)  # a file went meanwhile: git looks at each again
    out = [(n, h.decode()) for n, h in zip(plain, hashes, strict=True)]
    for name in names:
        if name not in plain:
            one = git(root, "hash-object", "--no-filters", "--", os.fsdecode(name)).strip()
            out.append((name, one.decode()))
    return out


_ENTRY = re.compile(
    rb"(\S) (\d+) ([0-9a-f]{40}) 0\t([^\0]*)\0  ctime: (\d+):(\d+)\n  mtime: (\d+):(\d+)\n"
    rb"  dev: (\d+)\tino: (\d+)\n  uid: (\d+)\tgid: (\d+)\n  size: (\d+)\tflags: [0-9a-f]+\n"
)


def _listed(root: Path, git: _Git) -> Records:
    """The index's stage-0 entries as git lists them (slow: for an index not read here), each
    given the fixed part it would have in a version 3 index."""
    records: Records = {}
    for m in _ENTRY.finditer(git(root, "ls-files", "-s", "-v", "--debug", "-z")):
        tag, mode, sha, name, *fields = m.groups()
        numbers = [int(f) & 0xFFFFFFFF for f in fields]  # ctime, mtime, dev, ino, uid, gid, size
        packed = b"".join(n.to_bytes(4, "big") for n in numbers[:6])
        packed += int(mode, 8).to_bytes(4, "big")
        packed += b"".join(n.to_bytes(4, "big") for n in numbers[6:])
        flags = 0x4000 | (0x8000 if tag.islower() else 0)
        extended = 0x4000 if tag.upper() == b"S" else 0
        sha_bytes = bytes.fromhex(sha.decode())
        records[name] = packed + sha_bytes + flags.to_bytes(2, "big") + extended.to_bytes(2, "big")
    return records


def _mode(head: bytes) -> int:
    return int.from_bytes(head[24:28], "big")


def _sha(head: bytes) -> str:
    return head[40:60].hex()


def _bits(head: bytes) -> bool:
    """Whether the entry tells git not to look at the file (assume-unchanged, skip-worktree)."""
    return bool(head[60] & 0x80) or (len(head) == 64 and bool(head[62] & 0x40))


def _hides(root: Path, name: bytes, head: bytes) -> bool:
    """Whether git takes the file ``name`` as the entry stages it without reading it: a bit
    tells git not to look, or the stat data git compares is the file's own."""
    if _mode(head) not in (0o100644, 0o100755):
        return False
    with contextlib.suppress(OSError):
        info = os.lstat(os.path.join(root, os.fsdecode(name)))
        if not stat.S_ISREG(info.st_mode):
            return False
        if _bits(head):
            return True
        sec, nsec = divmod(info.st_mtime_ns, 1_000_000_000)
        entry_sec, entry_nsec = (
            int.from_bytes(head[8:12], "big"),
            int.from_bytes(head[12:16], "big"),
        )
        size = int.from_bytes(head[36:40], "big")
        return entry_sec == sec and entry_nsec in (0, nsec) and size == info.st_size & 0xFFFFFFFF
    return False
