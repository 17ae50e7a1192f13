"""Whether the user trusts a folder's project files, and the record of what they trusted.

Project files come from whoever wrote the repository: ``reasonix.toml`` and ``.mcp.json`` (read by
reasonix), and ``.reasonix/`` and ``.claude/settings.json`` (hashed too, so that a hook or setting
added there later makes the folder ask again). Until the user trusts the folder they decide nothing
about where a key goes, what runs or what is allowed (:func:`reasonix.config.load_config` keeps
only their tightening settings: added deny rules, a lower budget).

A folder is trusted by the user only, in one of three ways:

- answering "yes" to the interactive question (:func:`trust_question` lists what the files
  would change). The answer is remembered in ``trusted-folders.json`` in the user's config
  folder together with a SHA-256 of the project files: a changed, added or removed file asks
  again;
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
#: Project files read by other agents (and by reasonix's future hooks): part of the hash.
PROJECT_EXTRA_FILES = (".claude/settings.json", ".claude/settings.local.json")
#: Folders whose files are hashed too: ours, and the commands and skills other agents' folders
#: hold (they load in trusted folders only, so adding one must ask again).
PROJECT_EXTRA_DIRS = (".reasonix", ".claude/commands", ".claude/skills", ".agents/skills")
TRUST_FILE = "trusted-folders.json"
_MAX_HASHED_FILES = 200
_MAX_HASHED_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class TrustDecision:
    """Whether the project folder is trusted, and how (``flag``, ``config``, ``remembered``;
    ``""`` when it is not)."""

    trusted: bool
    how: str = ""


def project_files(project_dir: Path) -> list[Path]:
    """The project configuration files present in ``project_dir`` (whatever their kind)."""
    found: list[Path] = []
    for name in (*PROJECT_CONFIG_FILES, *PROJECT_EXTRA_FILES):
        path = project_dir / name
        if os.path.lexists(path):
            found.append(path)
    for name in PROJECT_EXTRA_DIRS:
        folder = project_dir / name
        if folder.is_dir() and not folder.is_symlink():
            for root, dirs, files in os.walk(folder):
                dirs.sort()
                found += [Path(root) / f for f in sorted(files)]
                if len(found) > _MAX_HASHED_FILES:
                    break
        elif folder.is_symlink():
            found.append(folder)
    return found[:_MAX_HASHED_FILES]


def fingerprint(project_dir: Path) -> str:
    """SHA-256 over the project files' names and contents (a symlink hashes as its target
    path and the content it leads to, so re-pointing it or changing its target changes the
    hash; anything but a regular file hashes as its kind, opened without blocking, so a FIFO
    cannot stall start-up). At most :data:`_MAX_HASHED_BYTES` are read in all."""
    digest = hashlib.sha256()
    budget = _MAX_HASHED_BYTES
    for path in project_files(project_dir):
        digest.update(str(path.relative_to(project_dir)).encode() + b"\0")
        try:
            if stat.S_ISLNK(os.lstat(path).st_mode):
                digest.update(b"link:" + os.readlink(path).encode())
            # What the loader reads, through any symlink: re-pointing a link changes the hash,
            # and so does changing the file it points to (``reasonix.toml -> conf/r.toml``).
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
            with os.fdopen(fd, "rb") as fh:
                info = os.fstat(fd)
                if not stat.S_ISREG(info.st_mode):
                    digest.update(f"kind:{stat.S_IFMT(info.st_mode)}".encode())
                else:
                    data = fh.read(max(budget, 0))
                    budget -= len(data)
                    digest.update(f"size:{info.st_size}:".encode() + data)
        except OSError as exc:
            digest.update(f"unreadable:{exc.errno}".encode())
        digest.update(b"\0")
    return digest.hexdigest()


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
        """The remembered trust of ``folder``, if its files are unchanged since."""
        record = self._read().get(_key(folder))
        if not isinstance(record, dict) or record.get("sha256") != fingerprint(folder):
            return None
        return TrustDecision(True, "remembered")

    def remember(self, folder: Path) -> None:
        """Trust ``folder`` as its files are now."""
        data = self._read()
        data[_key(folder)] = {"sha256": fingerprint(folder)}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=1, sort_keys=True)
        os.replace(tmp, self.path)


def _inside(folder: Path, parent: Path) -> bool:
    try:
        folder.relative_to(parent)
    except ValueError:
        return False
    return True


def decide(
    project_dir: Path,
    *,
    flag: bool,
    folders: Iterable[str],
    store: TrustStore,
) -> TrustDecision:
    """Trust of ``project_dir``: the ``--trust`` flag, then ``[trust] folders`` from the user's
    config, then a remembered answer whose hash still matches."""
    if flag:
        return TrustDecision(True, "flag")
    here = project_dir.resolve()
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


def trust_question(ignored: Iterable[str], refused: Iterable[str]) -> str:
    """The interactive question: what trusting the folder would change, and what would stay
    refused even then."""
    lines = ["This folder has project configuration written by whoever made the repository."]
    lines.append("Trusting it lets these files decide where requests go, what runs and what")
    lines.append("is allowed:")
    for file, what in _grouped(ignored).items():
        lines.append(f"  {file}:")
        lines += [f"    {w}" for w in what]
    still = list(refused)
    if still:
        lines.append("Even if you trust it, these stay refused:")
        lines += [f"  {item}" for item in still]
    lines.append("Trust this folder? The answer is remembered until these files change. [y/N] ")
    return "\n".join(lines)
