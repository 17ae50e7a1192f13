"""Whether the user trusts a folder's project files, and the record of what they trusted.

Project files come from whoever wrote the repository: ``reasonix.toml`` and ``.mcp.json``,
``.claude/settings*.json`` (hooks), and the folders commands, skills and agent profiles load from
(``.reasonix/``, ``.claude/commands``, ``.claude/skills``, ``.claude/agents``,
``.agents/skills``), and ``.claude/hooks``, where Claude Code's convention keeps hook scripts,
and any file of the folder a hook's or a server's command names (``sh scripts/hook.sh``).
Until the user trusts the folder they decide nothing about where a key goes, what runs or what
is allowed (:func:`reasonix.config.load_config` keeps only their tightening
settings: added deny rules, a lower budget).

A folder is trusted by the user only, in one of three ways:

- answering "yes" to the interactive question (:func:`trust_question` lists what the files
  would change). The answer is remembered in ``trusted-folders.json`` in the user's config
  folder together with a SHA-256 of every byte of every project file (:func:`measure`): a
  changed, added or removed byte or file asks again, at any size and file count. Symlinks are
  followed to what they name inside the folder; a folder whose files cannot all be hashed (a
  symlink out of it, more than :data:`MAX_HASHED_FILES` files or :data:`MAX_HASHED_BYTES`
  bytes, an unreadable file) cannot be remembered: it is asked about again on every start, so
  nothing loads from it that was not hashed when the user said yes;
- ``--trust`` on the command line, for this run;
- ``[trust] folders = ["/path"]`` in the user's own ``config.toml`` (the folder and those below).

Nothing a project file says can make its folder trusted. Even trusted, a project never sends a
key one of the user's own providers uses to a base URL the user did not configure: that stays the
user's to write in their own ``config.toml``.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Project files read by reasonix.
PROJECT_CONFIG_FILES = ("reasonix.toml", ".mcp.json")
#: Project files read by other agents and by reasonix's hooks: part of the hash.
PROJECT_EXTRA_FILES = (".claude/settings.json", ".claude/settings.local.json")
#: Folders whose files are hashed too: ours, and the commands, skills and agent profiles other
#: agents' folders hold (they load in trusted folders only, so adding one must ask again).
PROJECT_EXTRA_DIRS = (
    ".reasonix",
    ".claude/hooks",  # where Claude Code's convention keeps the scripts settings.json hooks run
    ".claude/commands",
    ".claude/skills",
    ".claude/agents",
    ".agents/skills",
)
TRUST_FILE = "trusted-folders.json"
#: Beside it: the records of the protected paths running background jobs were started without
#: (:class:`reasonix.safety.plants.CreationGuard`).
RUNNING_JOBS_DIR = "running-jobs"
#: Past these a folder's files are not hashed at all, and the folder cannot be remembered
#: (never a partial hash that later content could slip past).
MAX_HASHED_FILES = 20_000
MAX_HASHED_BYTES = 256 * 1024 * 1024
_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class TrustDecision:
    """Whether the project folder is trusted, and how (``flag``, ``config``, ``remembered``;
    ``""`` when it is not)."""

    trusted: bool
    how: str = ""
    #: protected files a background job still running may have planted: the folder is not
    #: trusted while they are there (:func:`reasonix.safety.plants.running_plants`)
    planted: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Fingerprint:
    """The SHA-256 of a folder's project files, and why it does not cover everything they
    load (None when it does); only a complete fingerprint is remembered."""

    sha256: str
    problem: str | None = None


class _Incomplete(Exception):
    pass


def _inside(folder: Path, parent: Path) -> bool:
    try:
        folder.relative_to(parent)
    except ValueError:
        return False
    return True


def _escape(path: Path, base: Path) -> str | None:
    """Why ``path`` (a symlink, or below one) leads out of ``base``, or None."""
    real = Path(os.path.realpath(path))
    if not _inside(real, base):
        return f"{path.relative_to(base)} is a symlink to {real}, outside the folder"
    return None


def project_files(project_dir: Path) -> list[Path]:
    """The project configuration files present in ``project_dir`` (whatever their kind), symlinked
    folders followed inside the folder; see :func:`measure` for what stops it."""
    return _project_files(project_dir, Path(os.path.realpath(project_dir)), [])


def _project_files(project_dir: Path, base: Path, problems: list[str]) -> list[Path]:
    found: list[Path] = []
    for name in (*PROJECT_CONFIG_FILES, *PROJECT_EXTRA_FILES):
        path = project_dir / name
        if os.path.lexists(path):
            found.append(path)
            if os.path.islink(path) and (why := _escape(path, base)):
                problems.append(why)
    for name in PROJECT_EXTRA_DIRS:
        folder = project_dir / name
        if not folder.is_dir():
            if os.path.lexists(folder):
                found.append(folder)  # a file, a dangling link: hashed as what it is
            continue
        if (why := _escape(folder, base)) is not None:
            problems.append(why)
            found.append(folder)
            continue
        seen: set[str] = set()
        for root, dirs, files in os.walk(folder, followlinks=True):
            real_root = os.path.realpath(root)
            if real_root in seen:  # a symlink loop, or a folder reached twice
                dirs[:] = []
                continue
            seen.add(real_root)
            dirs.sort()
            kept = []
            for d in dirs:
                sub = Path(root) / d
                why = _escape(sub, base) if sub.is_symlink() else None
                if why is not None:
                    problems.append(why)
                    found.append(sub)
                else:
                    kept.append(d)
            dirs[:] = kept
            for f in sorted(files):
                path = Path(root) / f
                found.append(path)
                if path.is_symlink() and (why := _escape(path, base)):
                    problems.append(why)
            if len(found) > MAX_HASHED_FILES:
                problems.append(f"it holds more than {MAX_HASHED_FILES:,} project files")
                return found
    # The programs the project's hooks and servers run from the folder (``sh scripts/hook.sh``,
    # ``python server.py``): changing one changes what runs, so it is part of the hash.
    from reasonix.safety.protected import config_named_files

    listed = set(found)
    for path in config_named_files(project_dir):
        if path not in listed:
            found.append(path)
            listed.add(path)
    return found


def measure(project_dir: Path) -> Fingerprint:
    """SHA-256 over every project file's name and every byte it holds, through symlinks (a
    symlink also hashes its target path, so re-pointing it changes the hash; anything but a
    regular file hashes as its kind, opened without blocking, so a FIFO cannot stall
    start-up), with why it is incomplete when it is (see the module docstring)."""
    digest = hashlib.sha256()
    problems: list[str] = []
    base = Path(os.path.realpath(project_dir))
    files = _project_files(project_dir, base, problems)
    total = 0
    try:
        if problems:
            raise _Incomplete(problems[0])
        for path in files:
            digest.update(str(path.relative_to(project_dir)).encode() + b"\0")
            total += _hash_file(digest, path, MAX_HASHED_BYTES - total)
            digest.update(b"\0")
    except _Incomplete as exc:
        digest.update(b"incomplete:" + str(exc).encode())
        return Fingerprint(digest.hexdigest(), str(exc))
    return Fingerprint(digest.hexdigest())


def _hash_file(digest: Any, path: Path, room: int) -> int:
    """Hash one file into ``digest``; the bytes read. Raises _Incomplete past ``room``."""
    try:
        if stat.S_ISLNK(os.lstat(path).st_mode):
            digest.update(b"link:" + os.readlink(path).encode())
        # What the loader reads, through any symlink: re-pointing a link changes the hash,
        # and so does changing the file it points to (``reasonix.toml -> conf/r.toml``).
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        digest.update(f"unreadable:{exc.errno}".encode())
        return 0
    read = 0
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            digest.update(f"kind:{stat.S_IFMT(info.st_mode)}".encode())
            return 0
        digest.update(f"size:{info.st_size}:".encode())
        while chunk := fh.read(_CHUNK):
            read += len(chunk)
            if read > room:
                raise _Incomplete(
                    f"its project files hold more than {MAX_HASHED_BYTES // (1024 * 1024)} MiB"
                )
            digest.update(chunk)
    return read


def fingerprint(project_dir: Path) -> str:
    """The SHA-256 of :func:`measure` (complete or not)."""
    return measure(project_dir).sha256


def _key(folder: Path) -> str:
    return str(folder.resolve())


class TrustStore:
    """The remembered answers, ``{folder: {"sha256": ...}}``, in a JSON file only the user can
    read."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def lookup(self, folder: Path) -> TrustDecision | None:
        """The remembered trust of ``folder``, if its files are unchanged since (and could all
        be hashed)."""
        record = self._read().get(_key(folder))
        if not isinstance(record, dict):
            return None
        now = measure(folder)
        if now.problem is not None or record.get("sha256") != now.sha256:
            return None
        return TrustDecision(True, "remembered")

    def remember(self, folder: Path, seen: Fingerprint | None = None) -> str | None:
        """Trust ``folder`` as its files were when the user saw them (``seen``, else now); the
        reason it cannot be remembered (see :func:`measure`), or None."""
        print_ = seen if seen is not None else measure(folder)
        if print_.problem is not None:
            return print_.problem
        data = self._read()
        data[_key(folder)] = {"sha256": print_.sha256}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=1, sort_keys=True)
        os.replace(tmp, self.path)
        return None


def decide(
    project_dir: Path,
    *,
    flag: bool,
    folders: Iterable[str],
    store: TrustStore,
) -> TrustDecision:
    """Trust of ``project_dir``: the ``--trust`` flag, then ``[trust] folders`` from the user's
    config, then a remembered answer whose hash still matches. Whatever says so, a folder in
    which a background job still running (in any session) may have planted a protected file is
    not trusted until the job ends and its plant is undone."""
    from reasonix.safety.plants import running_plants

    here = project_dir.resolve()
    planted = running_plants(store.path.parent / RUNNING_JOBS_DIR, here)
    if planted:
        return TrustDecision(False, planted=tuple(planted))
    if flag:
        return TrustDecision(True, "flag")
    for entry in folders:
        if _inside(here, Path(entry).expanduser().resolve()):
            return TrustDecision(True, "config")
    return store.lookup(here) or TrustDecision(False)


def _grouped(items: Iterable[str]) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for item in items:
        file, _, what = item.partition(": ")
        groups.setdefault(file, []).append(what)
    return groups


def untrusted_notice(ignored: Iterable[str]) -> str:
    """The one notice for a folder that is not trusted, naming what was ignored (empty when
    nothing was)."""
    groups = _grouped(ignored)
    if not groups:
        return ""
    named = "; ".join(f"{file} ({', '.join(what)})" for file, what in groups.items())
    return (
        f"This folder is not trusted, so its project configuration was ignored: {named}. "
        "Only added deny rules and a lower budget apply. Trust it with `reasonix` (the "
        "question), `--trust`, or [trust] folders in your config.toml."
    )


def refused_notice(ignored: Iterable[str]) -> str:
    """The notice for what a trusted project may still not do (empty when nothing)."""
    items = list(ignored)
    if not items:
        return ""
    return "Project settings not applied: " + "; ".join(items) + "."


def trust_question(
    groups: Iterable[tuple[str, Iterable[str]]],
    refused: Iterable[str],
    *,
    unremembered: str | None = None,
) -> str:
    """The interactive question: every item trusting the folder would make take effect, by
    group (:func:`reasonix.app.trust_items.trust_items`), what would stay refused even then, and
    why "yes" cannot be remembered (``unremembered``, from :func:`measure`) when it cannot."""
    lines = ["This folder has project configuration written by whoever made the repository."]
    lines.append("Trusting it lets these files decide where requests go, what runs and what")
    lines.append("is allowed:")
    for heading, items in groups:
        lines.append(f"  {heading}:")
        lines += [f"    {item}" for item in items]
    still = list(refused)
    if still:
        lines.append("Even if you trust it, these stay refused:")
        lines += [f"  {item}" for item in still]
    if unremembered:
        lines.append(f"This answer cannot be remembered ({unremembered}): yes trusts it for")
        lines.append("this run only.")
        lines.append("Trust this folder? [y/N] ")
    else:
        lines.append("Trust this folder? The answer is remembered until these files change. [y/N] ")
    return "\n".join(lines)
