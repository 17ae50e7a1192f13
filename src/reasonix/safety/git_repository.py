"""What a repository's own git configuration makes git run.

A repository is data someone else wrote, and its ``.git/config`` can name programs that even a
read-only ``git status`` or ``git log`` runs: ``core.fsmonitor``, ``core.pager``,
``diff.external``, textconv and filter drivers, ``gpg.program``, aliases, included files. An
archive or a clone from a stranger carries them. :func:`repository_obstacle` says why an allow
rule may not cover a git command in such a repository (or None when its configuration names no
program), so the user is asked instead.

Only the files the repository itself holds are read (``config``, ``config.worktree``, and those of
the common folder a linked worktree points to); the user's global and system files are theirs.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

#: Keys (lower case, ``section.key`` or ``section.*.key``) whose value is a program git runs.
COMMAND_KEYS = re.compile(
    r"core\.(fsmonitor|pager|editor|sshcommand|askpass|alternaterefscommand|gitproxy|hookspath)"
    r"|diff\.external|sequence\.editor|gpg(\..+)?\.program|credential(\..+)?\.helper"
    r"|pager\..+|filter\..+\.(clean|smudge|process)|diff\..+\.(textconv|command)"
    r"|merge\..+\.driver|uploadpack\.packobjectshook|(difftool|mergetool|man|browser)\..+\.(cmd|path)"
    r"|web\.browser|remote\..+\.(uploadpack|receivepack|vcs)|submodule\..+\.update"
    r"|include\..+|includeif\..+|sendemail\..*(smtpserver|sendmailcmd)|instaweb\..+"
)
MAX_CONFIG_BYTES = 1 << 20
_SECTION = re.compile(r'\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]')
_KEY = re.compile(r"([A-Za-z][A-Za-z0-9-]*)\s*(=|$|[;#])")


def _is_git_directory(folder: Path) -> bool:
    """Whether ``folder`` itself has a git folder's layout (``HEAD``, ``objects/``, ``refs/``):
    git's discovery takes such a folder as a repository (a bare one, or one whose ``config``
    gives it a work tree) when no ``.git`` is found in it first."""
    return (
        (folder / "HEAD").exists() and (folder / "objects").is_dir() and (folder / "refs").is_dir()
    )


def dot_git_target(folder: Path) -> Path | None:
    """The git folder ``folder``'s own ``.git`` stands for (None when it has none): the folder
    itself, or for a linked worktree or a submodule the folder its ``gitdir:`` line names; a
    ``.git`` file without one is returned as it is (it cannot be read as a repository)."""
    dot_git = folder / ".git"
    if dot_git.is_dir():
        return dot_git
    if not dot_git.is_file():
        return None
    try:
        text = dot_git.read_text(errors="replace")[:4096]
    except OSError:
        return dot_git
    line = text.strip().splitlines()[0] if text.strip() else ""
    if line.startswith("gitdir:"):
        return Path(os.path.realpath(folder / line[len("gitdir:") :].strip()))
    return dot_git


def find_git_dir(start: Path) -> Path | None:
    """The git folder of the repository ``start`` is in (None outside any repository): in each
    folder from ``start`` up, as git looks, its ``.git`` (:func:`dot_git_target`), else the
    folder itself when it has a git folder's layout."""
    for folder in (start, *start.parents):
        found = dot_git_target(folder)
        if found is not None:
            return found
        if _is_git_directory(folder):
            return folder
    return None


def config_files(git_dir: Path) -> list[Path]:
    """The configuration files a repository of its own holds (present or not)."""
    files = [git_dir / "config", git_dir / "config.worktree"]
    commondir = git_dir / "commondir"
    if commondir.is_file():
        try:
            common = commondir.read_text(errors="replace").strip()
        except OSError:
            common = ""
        base = Path(os.path.realpath(git_dir / common)) if common else git_dir
        files += [base / "config", base / "config.worktree"]
    return files


def config_entries(text: str) -> list[tuple[str, str]]:
    """The ``(key, value)`` pairs of git configuration ``text`` in order (``section.key`` or
    ``section.sub.key``, the section and key in lower case, a subsection as written; a key
    without ``=`` has the value ``""``); a line that cannot be read gives the key ``?``, so a
    caller stays careful."""
    found: list[tuple[str, str]] = []
    section = ""
    lines = text.splitlines()
    k = 0
    while k < len(lines):
        line = lines[k].strip()
        k += 1
        while line.endswith("\\") and k < len(lines):  # a value continued on the next line
            line = line[:-1] + lines[k]
            k += 1
        while line.startswith("["):
            match = _SECTION.match(line)
            if match is None:
                found.append(("?", ""))
                line = ""
                break
            name, sub = match.group(1).lower(), match.group(2)
            # [section.sub] is the old spelling of [section "sub"]
            section = f"{name}.{sub}" if sub is not None else name
            line = line[match.end() :].strip()
        if not line or line[0] in "#;":
            continue
        match = _KEY.match(line)
        if match is None or not section:
            found.append(("?", ""))
            continue
        key = f"{section}.{match.group(1).lower()}"
        value = _value(line[match.end() :]) if match.group(2) == "=" else ""
        found.append((key, value))
    return found


def read_config(path: Path) -> str | None:
    """The text of the configuration file ``path`` ("" when it is not a regular file or cannot
    be read); None when it is larger than git configuration is read to."""
    try:
        if not path.is_file():
            return ""
        if path.stat().st_size > MAX_CONFIG_BYTES:
            return None
        return path.read_text(errors="replace")
    except OSError:
        return ""


def _value(raw: str) -> str:
    """A configuration value as git reads it: quotes removed, escapes applied, a comment
    outside quotes dropped."""
    out: list[str] = []
    quoted = False
    k = 0
    while k < len(raw):
        c = raw[k]
        if c == "\\" and k + 1 < len(raw):
            nxt = raw[k + 1]
            out.append({"n": "\n", "t": "\t", "b": "\b"}.get(nxt, nxt))
            k += 2
            continue
        if c == '"':
            quoted = not quoted
        elif c in "#;" and not quoted:
            break
        else:
            out.append(c)
        k += 1
    return "".join(out).strip()


def is_command_setting(key: str, value: str) -> bool:
    """Whether the setting ``key`` (as :func:`config_entries` gives it) names a program git
    runs."""
    # Subsections keep their case, but the pattern is written in lower case.
    if COMMAND_KEYS.fullmatch(key.lower()):
        return True
    return key.startswith("alias.") and key.count(".") == 1 and value.startswith("!")


def command_settings(text: str) -> list[str]:
    """The settings in git configuration ``text`` that name a program (``core.fsmonitor``, ...);
    a line that cannot be read is reported as ``?`` so a caller stays careful."""
    return [
        key for key, value in config_entries(text) if key == "?" or is_command_setting(key, value)
    ]


def repository_obstacle(start: Path) -> str | None:
    """Why git in ``start`` may run a program the repository's own configuration names (or a
    hook), or None."""
    git_dir = find_git_dir(start)
    if git_dir is None:
        return None
    return git_dir_obstacle(git_dir)


def _submodule_configs(git_dir: Path, most: int = 256) -> list[Path] | None:
    """The configuration files of the submodules' git folders (``modules/**``, in the folder
    and in its common folder): ``git status`` and others recurse into a submodule, which reads
    its own; None past ``most`` of them."""
    found: list[Path] = []
    bases = dict.fromkeys([git_dir, *(f.parent for f in config_files(git_dir))])
    for base in bases:
        modules = base / "modules"
        if not modules.is_dir():
            continue
        for path in modules.rglob("config*"):
            if path.name in ("config", "config.worktree") and (path.parent / "HEAD").exists():
                found.append(path)
                if len(found) > most:
                    return None
    return found


def git_dir_obstacle(git_dir: Path) -> str | None:
    """:func:`repository_obstacle` for the git folder itself."""
    if not git_dir.is_dir():
        return "the repository's .git file cannot be read"
    submodules = _submodule_configs(git_dir)
    if submodules is None:
        return "the repository has more submodules than can be checked"
    for path in [*config_files(git_dir), *submodules]:
        try:
            if not path.exists():
                continue
            if not path.is_file() or path.stat().st_size > MAX_CONFIG_BYTES:
                return f"the repository's {path.name} cannot be checked"
            text = path.read_text(errors="replace")
        except OSError:
            return f"the repository's {path.name} cannot be read"
        settings = command_settings(text)
        if settings:
            what = "a line git may read differently" if settings[0] == "?" else settings[0]
            return (
                f"the repository's own git configuration sets {what}, which makes git run a program"
            )
    return None


#: Hooks that commands which only read run too: ``git status`` and ``git diff`` refresh and
#: write the index, which runs ``post-index-change``.
READING_HOOKS = frozenset({"post-index-change"})


def has_hooks(git_dir: Path, names: frozenset[str] | None = None) -> bool:
    """Whether the repository holds a hook git would run (an executable file in ``hooks/``
    that is not a ``.sample``), or one of ``names``."""
    hooks = git_dir / "hooks"
    try:
        entries = list(os.scandir(hooks))
    except OSError:
        return False
    return any(
        not e.name.endswith(".sample")
        and (names is None or e.name in names)
        and os.access(e.path, os.X_OK)
        and not e.is_dir()
        for e in entries
    )


#: A filter driver's programs: ``git status`` (and ``ls-files -m``, ``describe --dirty``) run a
#: ``clean`` program on each file whose attributes name the filter and whose time stamp changed.
_FILTER_KEYS = re.compile(r"filter\..+\.(clean|process)|include\..+|includeif\..+|\?")


def user_config_files() -> list[Path]:
    """The user's and the system's git configuration files, where git reads them (their
    relative paths name places in every work tree)."""
    env = os.environ
    files: list[Path] = []
    if not env.get("GIT_CONFIG_NOSYSTEM"):
        system = env.get("GIT_CONFIG_SYSTEM")
        files += [Path(system)] if system else [Path(p) for p in _SYSTEM_CONFIGS]
    home = Path(env.get("HOME") or os.path.expanduser("~"))
    if env.get("GIT_CONFIG_GLOBAL"):
        files.append(Path(env["GIT_CONFIG_GLOBAL"]))
    else:
        xdg = Path(env.get("XDG_CONFIG_HOME") or home / ".config")
        files += [home / ".gitconfig", xdg / "git" / "config"]
    return files


_SYSTEM_CONFIGS = ("/etc/gitconfig", "/usr/local/etc/gitconfig", "/opt/homebrew/etc/gitconfig")


def user_filter_drivers() -> bool:
    """Whether the user's or the system's git configuration defines a filter driver (a
    ``clean`` or ``process`` program), or may (an include, a line that cannot be read,
    settings given in the environment). The repository's own configuration is
    :func:`repository_obstacle`'s."""
    if os.environ.get("GIT_CONFIG_PARAMETERS") or os.environ.get("GIT_CONFIG_COUNT"):
        return True
    for path in user_config_files():
        text = read_config(path)
        if text is None or any(_FILTER_KEYS.fullmatch(k.lower()) for k, _ in config_entries(text)):
            return True
    return False
