"""What no writer may change unasked in its writable workspace: the files that make code run
later, outside the sandbox, without anyone reviewing them. One list, used by every writer path.

- reasonix's own configuration (the next run in a trusted folder starts the MCP servers and
  hooks it names) and the files in the folder its commands name (:func:`config_named_files`);
- other agents' and editors' configuration, and shell start-up files (a workspace that is a
  home folder);
- the repository's git machinery, and what its actual configuration names inside the work tree
  (:func:`git_named_paths`): the ``core.hooksPath`` folder, included files,
  ``core.attributesFile``, a program in the work tree a setting runs, ``.gitattributes`` when
  drivers are defined, hook managers' configuration when the repository has hooks.

:func:`protected_paths` is the list; :func:`protection` says which entry covers a path (the file
tools ask before writing one in every mode but yolo; no allow rule covers a command naming one).
For confined commands :func:`bind_arguments` makes those that exist read-only inside the sandbox
(and binds ``.git`` onto itself so it cannot be renamed away), and
:class:`reasonix.safety.plants.CreationGuard` undoes what a command created among them.

Not covered (the README's sandbox section says so too): the same names in subfolders for bash,
nested repositories a command creates, ``.gitattributes`` in subfolders, and what the programs a
hook runs read in turn (``package.json`` scripts, a ``Makefile``): ordinary project files, which
show in ``git diff``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reasonix.safety.git_repository import (
    config_entries,
    config_files,
    dot_git_target,
    has_hooks,
    is_command_setting,
    read_config,
    user_config_files,
)

#: Our own configuration, at a workspace root (the folders are protected at any depth for the
#: file tools).
OWN_CONFIG: tuple[str, ...] = ("reasonix.toml", ".mcp.json", ".reasonix", ".claude")
#: Our own configuration files, protected at any depth for the file tools.
OWN_CONFIG_FILES: tuple[str, ...] = ("reasonix.toml", ".mcp.json")
#: Other agents' and editors' configuration, which they obey unconfined.
OTHER_AGENTS_CONFIG: tuple[str, ...] = (
    ".cursor", ".gemini", ".codex", ".windsurf", ".continue", ".vscode", ".zed", ".aider.conf.yml",
    ".envrc",
)  # fmt: skip
#: Shell start-up files (what a workspace that is a home folder would run at the next login).
SHELL_STARTUP: tuple[str, ...] = (
    ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc", ".zshenv",
    ".zprofile", ".zlogin", ".config/fish",
)  # fmt: skip
#: Configuration that the hooks a hook manager installs read (and run the commands of).
HOOK_MANAGER_CONFIG: tuple[str, ...] = (
    ".pre-commit-config.yaml", "lefthook.yml", "lefthook.yaml", ".lefthook.yml", ".lefthook.yaml",
    "lefthook-local.yml", ".lefthook", ".overcommit.yml", ".husky",
)  # fmt: skip
#: Inside ``.git``: what makes git run a program (the configuration, hooks, the git folders of
#: submodules and linked worktrees, and the file that points a repository at another one's
#: configuration).
GIT_MACHINERY: tuple[str, ...] = (
    "config", "config.worktree", "hooks", "modules", "worktrees", "commondir",
)  # fmt: skip
#: Hook names git runs, for a hooks path that is the work tree itself.
_HOOK_NAMES = (
    "applypatch-msg", "pre-applypatch", "post-applypatch", "pre-commit", "pre-merge-commit",
    "prepare-commit-msg", "commit-msg", "post-commit", "pre-rebase", "post-checkout",
    "post-merge", "pre-push", "pre-receive", "update", "post-receive", "post-update",
    "reference-transaction", "push-to-checkout", "pre-auto-gc", "post-rewrite",
    "sendemail-validate", "fsmonitor-watchman", "post-index-change",
)  # fmt: skip
_MAX_INCLUDES = 32


def _resolved(value: str, base: Path) -> Path:
    return Path(os.path.realpath(os.path.join(base, os.path.expanduser(value))))


@dataclass
class _GitNamed:
    """What the repository's configuration names inside ``root`` (its work tree: ``top``),
    entry by entry (:meth:`entry`); :meth:`finish` adds what its drivers and hooks imply."""

    root: Path
    top: Path
    found: dict[Path, str] = field(default_factory=dict)
    drivers: bool = False
    hooks_path: bool = False

    def add(
        self, path: Path, why: str, written: str | None = None, base: Path | None = None
    ) -> None:
        # ``written`` as the configuration spells it (from ``base``): when a symlink leads to
        # ``path``, the link itself is protected too (else it could be re-pointed).
        if written is not None and base is not None:
            self.add(Path(os.path.normpath(os.path.join(base, os.path.expanduser(written)))), why)
        if path != self.root and path.is_relative_to(self.root) and path not in self.found:
            self.found[path] = why

    def entry(self, key: str, value: str, config: Path, repository: bool) -> Path | None:
        """One ``key = value`` of ``config`` (a repository's file); the file it includes."""
        low = key.lower()
        included = None
        if low == "core.hookspath":
            self._hooks_path(value)
        elif low == "include.path" or (low.startswith("includeif.") and low.endswith(".path")):
            included = _resolved(value, config.parent)
            self.add(included, key, value, config.parent)
        elif low == "core.attributesfile":
            self.add(_resolved(value, self.top), key, value, self.top)
        # Drivers the user's own files define run programs the user installed (git-lfs).
        if repository and low.startswith(("filter.", "diff.", "merge.")) and low.count(".") >= 2:
            self.drivers = True
        if is_command_setting(key, value) and not low.startswith(("include", "core.hookspath")):
            for word in _command_words(value.removeprefix("!")):
                if "/" in word or os.path.lexists(self.top / word):
                    self.add(_resolved(word, self.top), key, word, self.top)
        return included

    def _hooks_path(self, value: str) -> None:
        self.hooks_path = True
        top = self.top
        folder = _resolved(value, top)
        if folder == self.root or (folder == top and self.root.is_relative_to(top)):
            for name in _HOOK_NAMES:
                self.add(folder / name, "core.hooksPath")
            return
        self.add(folder, "core.hooksPath", value, top)
        if folder.is_relative_to(top) and folder != top:
            first = top / folder.relative_to(top).parts[0]
            if first.name.startswith("."):  # husky's .husky/_ runs the scripts in .husky/
                self.add(first, "core.hooksPath")

    def finish(self, git_dir: Path) -> list[tuple[Path, str]]:
        if self.drivers:
            why = "the drivers of the repository's configuration"
            for path in (self.top / ".gitattributes", self.root / ".gitattributes"):
                self.add(path, why)
            self.add(git_dir / "info" / "attributes", why)
        if self.hooks_path or has_hooks(git_dir):
            for name in HOOK_MANAGER_CONFIG:
                self.add(self.top / name, "the repository's hooks")
                self.add(self.root / name, "the repository's hooks")
        return list(self.found.items())


def git_named_paths(root: Path) -> list[tuple[Path, str]]:
    """The paths inside ``root`` that the repository's own configuration makes git run or
    obey, each with the setting that names it (see the module docstring); empty outside a
    repository."""
    # The repository may start above the workspace (a run in a subfolder): its configuration
    # still names paths inside the workspace, relative to its own work tree.
    top = next((f for f in (root, *root.parents) if os.path.lexists(f / ".git")), None)
    git_dir = dot_git_target(top) if top is not None else None
    if top is None or git_dir is None:
        return []
    named = _GitNamed(root, top)
    # The user's own files too: a relative core.hooksPath in ~/.gitconfig points into every
    # repository's work tree.
    users = user_config_files()
    queue = [*users, *config_files(git_dir)]
    seen: set[Path] = set()
    while queue and len(seen) < _MAX_INCLUDES:
        config = queue.pop(0)
        real = Path(os.path.realpath(config))
        if real in seen:
            continue
        seen.add(real)
        for key, value in config_entries(read_config(real) or ""):
            included = named.entry(key, value, real, config not in users) if value else None
            if included is not None:
                queue.append(included)
    return named.finish(git_dir)


#: Our configuration files whose commands run programs.
_CONFIG_RUNNING_FILES = (
    "reasonix.toml",
    ".mcp.json",
    ".claude/settings.json",
    ".claude/settings.local.json",
)

#: The most bytes of a configuration file read to find the files its commands name.
_MAX_NAMING_BYTES = 1 << 20


def config_named_files(project_dir: Path) -> list[Path]:
    """Files inside the folder that a word of a string in our own configuration files there
    names (``reasonix.toml``'s hook commands, ``.mcp.json``'s servers' commands, arguments and
    ``cwd``, ``.claude/settings*.json``'s hooks: ``sh tools/server.sh``), sorted. They run
    outside the sandbox when the folder is trusted: protected like the configuration itself,
    and part of the trust fingerprint.

    A word is taken from the folder, from a server's ``cwd`` and from any folder of the project
    another word names (``cd scripts && sh ./start.sh``); ``$CLAUDE_PROJECT_DIR`` is the
    folder; a ``-c`` script's words are read too; a word with a ``/`` counts even when no file
    is there yet (``[ -f scripts/local.sh ] && sh scripts/local.sh``)."""
    base = Path(os.path.realpath(project_dir))
    words = _config_words(project_dir, base)
    folders = [base]
    for word in words:
        candidate = Path(word) if os.path.isabs(word) else base / word
        real = Path(os.path.realpath(candidate))
        if real != base and real.is_relative_to(base) and real.is_dir() and real not in folders:
            folders.append(real)
    found: set[Path] = set()
    for word in words:
        if not (word.startswith("-") or "://" in word or "=" in word):
            found.update(_named_by(word, folders, base, project_dir))
    return sorted(found)


def _config_words(project_dir: Path, base: Path) -> list[str]:
    """The words of every string in our configuration files in ``project_dir`` (``base``)."""
    import tomllib

    words: list[str] = []
    for name in _CONFIG_RUNNING_FILES:
        path = project_dir / name
        try:
            if not path.is_file() or path.stat().st_size > _MAX_NAMING_BYTES:
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            data: Any = tomllib.loads(text) if name.endswith(".toml") else json.loads(text)
        except (OSError, ValueError):
            continue
        for value in _strings(data):
            for variable in ("${CLAUDE_PROJECT_DIR}", "$CLAUDE_PROJECT_DIR"):
                value = value.replace(variable, str(base))
            words += _command_words(value)
    return [w for w in words if w and "\0" not in w and len(w) <= 4096]


def _named_by(word: str, folders: list[Path], base: Path, project_dir: Path) -> list[Path]:
    """The files inside the project that ``word`` names from one of ``folders``."""
    out = []
    for folder in folders:
        candidate = Path(word) if os.path.isabs(word) else folder / word
        try:
            exists = candidate.is_file()
        except OSError:
            continue
        if not exists and ("/" not in word or folder != base):
            continue
        real = Path(os.path.realpath(candidate))
        if real != base and real.is_relative_to(base) and not real.is_dir():
            out.append(project_dir / real.relative_to(base))
    return out


def _command_words(value: str, depth: int = 0) -> list[str]:
    """The words of a command line as the shell lexer reads them (operators, quotes, nested
    commands, redirections' targets: ``sh tools/run.sh>log&``), with those of a script given as
    one word (``sh -c '...'``); a line the lexer cannot read whole is split at blanks too."""
    from reasonix.safety.shell.lexer import parse

    script = parse(value)
    words: list[str] = []
    for command in script.commands:
        targets = [r.target for r in command.redirects if r.target is not None]
        words += [w.value for w in (*command.assignments, *command.words, *targets)]
    if not script.sure:
        words += value.split()
    out = []
    for word in words:
        if depth < 2 and (" " in word or "\n" in word):
            out += _command_words(word, depth + 1)
        else:
            out.append(word)
    return out


def _strings(data: Any) -> list[str]:
    out: list[str] = []
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict):
            stack += list(item.values())
        elif isinstance(item, list):
            stack += item
    return out


def protected_paths(root: Path, git_named: list[tuple[Path, str]] | None = None) -> list[Path]:
    """The protected paths of one workspace root, ``.git`` itself included (``git_named``:
    :func:`git_named_paths` of ``root`` when the caller has it)."""
    fixed = [root / name for name, _what in _LISTED]  # root / ".git/." is root / ".git"
    named = git_named_paths(root) if git_named is None else git_named
    return list(dict.fromkeys([*fixed, *(path for path, _ in named), *config_named_files(root)]))


def protection(path: Path, root: Path) -> str | None:
    """Why writing ``path`` (resolved, inside ``root``) could make code run later outside the
    sandbox, naming the protected entry that covers it; None for an ordinary file."""
    root = Path(os.path.realpath(root))
    try:
        rel = path.relative_to(root)
    except ValueError:
        return None
    if not rel.parts:
        return None
    return _own_protection(rel) or _listed_protection(path, root) or _named_protection(path, root)


def _own_protection(rel: Path) -> str | None:
    """Our own configuration and git's folder, at any depth of ``rel``."""
    parts = rel.parts
    own_dirs = {n for n in OWN_CONFIG if not n.endswith((".toml", ".json"))} | {".git"}
    hit = next((p for p in parts if p in own_dirs), None)
    if hit is not None:
        return f"{hit}/, our own configuration" if hit != ".git" else ".git/, git's machinery"
    if parts[0] in OWN_CONFIG:
        return f"{parts[0]}, our own configuration"
    if parts[-1] in OWN_CONFIG_FILES:  # a run started in that subfolder reads it
        return f"{rel.as_posix()}, our own configuration for a run started in its folder"
    return None


#: The fixed entries at a root, each with what it is (:func:`protected_paths` lists them).
_LISTED: tuple[tuple[str, str], ...] = (
    *((n, "our own configuration") for n in OWN_CONFIG),
    *((n, "another agent's configuration") for n in OTHER_AGENTS_CONFIG),
    *((n, "a shell start-up file") for n in SHELL_STARTUP),
    *((f".git/{n}", "git's machinery") for n in (".", *GIT_MACHINERY)),
)


def _listed_protection(path: Path, root: Path) -> str | None:
    """The fixed entry at ``root`` that covers ``path`` (or whose symlink leads to it)."""
    for name, what in _LISTED:
        entry = root / name
        if path.is_relative_to(entry):
            return f"{name}, {what}"
        if entry.is_symlink():  # what a protected link names is protected too
            real = Path(os.path.realpath(entry))
            if path.is_relative_to(real):
                return f"{name} (a symlink to {real.relative_to(root).as_posix()}), {what}"
    return None


def _named_protection(path: Path, root: Path) -> str | None:
    """The file our configuration runs or the path git's configuration names at ``path``."""
    for entry in config_named_files(root):
        if path == entry or path == Path(os.path.realpath(entry)):
            shown = entry.relative_to(root).as_posix()
            return f"{shown}, a program our own configuration runs"
    for entry, why in git_named_paths(root):
        real = Path(os.path.realpath(entry))
        if path.is_relative_to(entry) or path.is_relative_to(real):
            shown = entry.relative_to(root).as_posix()
            return f"{shown}, which git runs or reads ({why})"
    return None


def bind_arguments(roots: Sequence[Path]) -> list[str]:
    """bubblewrap options (after the roots are bound) that make the protected paths that exist
    read-only (a symlink among them: what it names inside the workspace; the link itself is
    left to :class:`~reasonix.safety.plants.CreationGuard`, since nothing can be mounted on one)."""
    args: list[str] = []
    for root in roots:
        git = root / ".git"
        if git.is_dir() and not git.is_symlink():
            # A mount point cannot be renamed: the .git the protections below sit in stays.
            args += ["--bind", str(git), str(git)]
        git_named = git_named_paths(root)
        hooks_folders = {p for p, why in git_named if why == "core.hooksPath"}
        for path in protected_paths(root, git_named):
            if path == git and git.is_dir() and not git.is_symlink():
                continue
            if path in hooks_folders and not os.path.lexists(path) and path.parent.is_dir():
                # A hooks folder not there yet: git runs what appears in it at the user's next
                # commit, even while the command still runs. An empty read-only folder stands in
                # (CreationGuard removes the empty mount point it leaves).
                args += ["--tmpfs", str(path), "--remount-ro", str(path)]
                continue
            if not path.exists() or not Path(os.path.realpath(path)).is_relative_to(root):
                continue
            if path.is_symlink():
                # Nothing can be mounted on a link (CreationGuard restores it); what it names
                # inside the workspace is made read-only instead.
                real = os.path.realpath(path)
                args += ["--ro-bind", real, real]
                continue
            args += ["--ro-bind", str(path), str(path)]
    return args
