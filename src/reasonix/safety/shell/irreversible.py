"""Commands that destroy what no snapshot can bring back: a force-push, a deleted remote branch,
a dropped database, deleted cloud objects or cluster resources, files changed outside the
workspace. :func:`irreversible_reason` recognises them (wrappers and ``sh -c`` seen through);
the permission engine asks before each in every mode unless the user's own configuration
allows that command by an explicit rule. The README ("What no snapshot can undo") lists them;
the system's temporary folders are scratch space unless the workspace is in one of them.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from reasonix.safety.shell.effects import effects, written_operands
from reasonix.safety.shell.git import Form, GitCall, parse_git
from reasonix.safety.shell.git_environment import git_environment
from reasonix.safety.shell.programs import prefix_of
from reasonix.safety.shell.rules import HARMLESS_DEVICES

__all__ = ["irreversible_reason"]

_DB_CLIENTS = frozenset(
    {"psql", "mysql", "mariadb", "sqlcmd", "mongosh", "mongo", "redis-cli", "clickhouse-client",
     "cqlsh", "cockroach", "duckdb"}
)  # fmt: skip
_DB_DESTROY = re.compile(
    r"\b(?:drop\s+(?:database|schema|table|index|view|user|role|keyspace|collection)"
    r"|truncate\b|delete\s+from\b|dropdatabase\b|flushall\b|flushdb\b)|\.drop\(",
    re.IGNORECASE,
)
_PUSH_FLAGS = frozenset(
    {"--force", "--force-with-lease", "--force-if-includes", "--mirror", "--delete", "--prune",
     "--stdin"}
)  # fmt: skip
_CLOUD_VERB = re.compile(r"^(?:delete|terminate|remove|deregister|purge)(?:-|$)")
#: what a redirection may name that is no file: a descriptor, bash's network connections
_NOT_FILES = ("/dev/fd/", "/dev/tcp/", "/dev/udp/")


def irreversible_reason(command: str, workspace: Path) -> str | None:
    """Why ``command`` destroys what no snapshot of ``workspace`` can bring back, or None.
    Read through the line's :func:`~reasonix.safety.shell.effects.effects`: each simple
    command's forms (wrappers and ``sh -c`` seen through), the files its operands write (its
    program's row of :data:`~reasonix.safety.shell.effects.PROGRAMS`) and the files its
    redirections write are judged."""
    cwd = Path(os.path.realpath(workspace))
    root = cwd
    for step in effects(command).steps:
        why = _outside_targets(step.redirected, cwd, root)
        if why:
            return why
        for form in step.as_written:
            words = [t for t in form if t is not None]
            if not words:
                continue
            why = _destroys(words, " ".join(words))
            why = why or _outside_targets(written_operands(words), cwd, root)
            if why:
                return why
        why = _git_unknown(step.forms)
        if why:
            return why
        if step.command.words:
            cwd = _after_cd([w.value for w in step.command.words], cwd)
    return _git_environment(command)


def _destroys(words: list[str], text: str) -> str | None:
    name = words[0].rsplit("/", 1)[-1]
    if name.startswith("mkfs"):
        return f"`{name}` formats a file system"
    if name in _DB_CLIENTS:
        return _db_client(name, text)
    check = _DESTROYERS.get(name)
    return check(name, words[1:]) if check is not None else None


def _db_client(name: str, text: str) -> str | None:
    if _DB_DESTROY.search(text):
        return f"`{name}` is given a statement that destroys data in a database"
    return None


def _leading(*leads: tuple[str, ...], why: str) -> Callable[[str, list[str]], str | None]:
    """A program whose first words, one of ``leads``, destroy (``{}`` in ``why``: the program
    and those words)."""

    def check(name: str, args: list[str]) -> str | None:
        for lead in leads:
            if tuple(args[: len(lead)]) == lead:
                return why.format(" ".join((name, *lead)))
        return None

    return check


_GH_DELETES = _leading(("repo", "delete"), ("release", "delete"), why="`{}` deletes it on GitHub")


def _gh(name: str, args: list[str]) -> str | None:
    if args[:1] == ["api"] and _method_delete(args):
        return "`gh api` sends a DELETE request to GitHub"
    return _GH_DELETES(name, args)


def _mysqladmin(name: str, args: list[str]) -> str | None:
    return "`mysqladmin drop` drops a database" if "drop" in args else None


def _cloud(name: str, args: list[str]) -> str | None:
    if any(_CLOUD_VERB.match(a) for a in args):
        return f"`{name}` deletes cloud resources"
    return None


def _kubectl(name: str, args: list[str]) -> str | None:
    if any(a in ("delete", "drain") for a in args[:3]):
        return "`kubectl` deletes cluster resources"
    return None


def _infrastructure(name: str, args: list[str]) -> str | None:
    if "destroy" in args or "-destroy" in args or args[:2] == ["state", "rm"]:
        return f"`{name}` destroys infrastructure"
    return None


def _http(name: str, args: list[str]) -> str | None:
    return f"`{name}` sends a DELETE request" if _method_delete(args) else None


def _rsync(name: str, args: list[str]) -> str | None:
    remote = bool(args) and re.match(r"^[^/\s]+:", args[-1]) is not None
    if remote and any(a.startswith("--delete") for a in args):
        return "`rsync --delete` deletes files on another machine"
    return None


def _method_delete(args: list[str]) -> bool:
    for i, arg in enumerate(args):
        value = None
        if arg in ("-X", "--request", "--method") and i + 1 < len(args):
            value = args[i + 1]
        elif arg.startswith(("-X", "--request=", "--method=")):
            value = arg.split("=", 1)[-1] if "=" in arg else arg[2:]
        elif arg.upper() == "DELETE" and i == 0:
            value = arg
        if value is not None and value.upper() == "DELETE":
            return True
    return False


def _git(name: str, args: list[str]) -> str | None:
    call = parse_git(tuple(args))
    why = _git_settings(call)
    if why or call.sub is None:
        return why
    return _GIT_SUBS.get(call.sub, _nothing)([a for a in call.args if a is not None])


def _git_unknown(forms: Iterable[Form]) -> str | None:
    """A git form (unknown words None) whose subcommand, own options, or arguments of a
    subcommand with a row in :data:`_GIT_SUBS`, are known only at run time: ``$F`` may be
    ``--force``, so the line is judged as if it were."""
    for form in sorted(forms, key=lambda f: tuple("" if t is None else t for t in f)):
        if not form or form[0] is None or form[0].rsplit("/", 1)[-1] != "git":
            continue
        call = parse_git(form[1:])
        unknown = not call.complete
        unknown = unknown or any(
            value is None for option, value in call.options if option in ("-c", "--config-env")
        )
        if call.sub in _GIT_SUBS and None in call.args:
            unknown = True
        if unknown:
            what = f"`git {call.sub}`" if call.sub else "a git command"
            return f"{what} is given a word known only at run time: it may force-push or delete"
    return None


def _git_environment(command: str) -> str | None:
    """The ``-c`` settings of :data:`_GIT_SETTINGS` given through git's environment on the line
    (attacker6 B3); a subcommand with a row in :data:`_GIT_SUBS` given settings it cannot read
    here (a configuration file, a run-time value) is judged as if they forced."""
    env = git_environment(command)
    if env is None:
        return None
    for key, value in env.settings:
        for row in _GIT_SETTINGS:
            if row.matches(key.lower()) and row.counts(value):
                return f"`{key}` set through git's environment {row.reason}"
    pushed = sorted(env.subs & _GIT_SUBS.keys())
    if env.unread and pushed:
        return (
            f"`git {pushed[0]}` runs with settings from {', '.join(sorted(env.unread))}, known "
            "only at run time: they may force a push or prune commits"
        )
    return None


def _git_settings(call: GitCall) -> str | None:
    for option, setting in call.options:
        if option not in ("-c", "--config-env") or setting is None:
            continue
        key, eq, value = setting.partition("=")
        # --config-env's value names an environment variable: what it holds is not known here
        known = None if option == "--config-env" else (value if eq else "true")
        for row in _GIT_SETTINGS:
            if row.matches(key.lower()) and row.counts(known):
                return f"`git -c {key}` {row.reason}"
    return None


@dataclass(frozen=True, slots=True)
class _Setting:
    """A git setting that stands for an option on the list: its key (lower case) starts with
    ``head`` and ends with ``tail`` (and holds ``inner``); ``counts`` says which values do (the
    value None when it is known only at run time)."""

    head: str
    tail: str
    counts: Callable[[str | None], bool]
    reason: str
    inner: str = ""

    def matches(self, key: str) -> bool:
        return (
            key.startswith(self.head)
            and key.endswith(self.tail)
            and len(key) > len(self.head) + len(self.tail)
            and self.inner in key[len(self.head) :]
        )


def _forcing_refspec(value: str | None) -> bool:
    return value is None or value.startswith(("+", ":"))


def _true(value: str | None) -> bool:
    return value is None or value.lower() in ("true", "yes", "on", "1", "")


def _expires(value: str | None) -> bool:
    return value is None or value.lower() not in ("never", "false")


#: ``-c`` settings that stand for an option of the list (``git -c remote.origin.push=+HEAD:x
#: push`` is ``git push origin +HEAD:x``); gc's expiry settings count on any subcommand, as
#: the automatic gc of ``commit``/``fetch``/``merge`` reads them too.
_GIT_SETTINGS = (
    _Setting("remote.", ".push", _forcing_refspec,
             "makes `git push` force-push or delete a remote branch"),
    _Setting("remote.", ".mirror", _true, "makes `git push` a --mirror push"),
    _Setting("gc.", "", _expires,
             "makes git's gc prune unreachable commits or expire reflogs for good",
             inner="expire"),
    _Setting("include", "path", lambda value: True,
             "reads settings from a file, which may force a push or prune commits"),
)  # fmt: skip


def _nothing(rest: list[str]) -> str | None:
    return None


def _git_pushes(sub: str) -> Callable[[list[str]], str | None]:
    """``git push`` and its plumbing (``send-pack``, ``http-push``): a forcing or deleting
    option (``http-push -D``; ``send-pack --stdin`` reads its refspecs from its input) or a
    ``+``/``:`` refspec after the remote."""

    def check(rest: list[str]) -> str | None:
        for arg in rest:
            flag = arg.split("=", 1)[0]
            short = arg.startswith("-") and not arg.startswith("--")
            # git takes any unambiguous prefix of a long option: --del is --delete
            if (flag.startswith("--") and prefix_of(flag, _PUSH_FLAGS)) or (
                short and any(letter in arg for letter in "fdD")
            ):
                return f"`git {sub}` with this option rewrites or deletes history on the remote"
        positional = [a for a in rest if not a.startswith("-")]
        if any(p.startswith(("+", ":")) for p in positional[1:]):
            return f"`git {sub}` with this refspec force-pushes or deletes a remote branch"
        return None

    return check


def _git_stash(rest: list[str]) -> str | None:
    if rest[:1] and rest[0] in ("drop", "clear"):
        return (
            f"`git stash {rest[0]}` deletes stashed work (a repository's .git is not snapshotted)"
        )
    return None


def _git_reflog(rest: list[str]) -> str | None:
    if rest[:1] and rest[0] in ("expire", "delete"):
        return "`git reflog` expiry removes the way back to earlier commits"
    return None


def _git_gc(rest: list[str]) -> str | None:
    if any(a.startswith("--prune") for a in rest):
        return "`git gc --prune` deletes unreachable commits for good"
    return None


def _git_branch(rest: list[str]) -> str | None:
    # -D, or -d with --force: an unmerged branch goes with its reflog
    forced = any(
        a == "-D" or (a.startswith("-") and not a.startswith("--") and "D" in a) for a in rest
    )
    deletes = any(a in ("-d", "--delete") or prefix_of(a, ("--delete",)) for a in rest)
    forced = forced or (deletes and any(a in ("-f", "--force") for a in rest))
    if forced:
        return (
            "`git branch -D` deletes a branch and its reflog "
            "(a repository's .git is not snapshotted)"
        )
    return None


def _git_ref_delete(sub: str) -> Callable[[list[str]], str | None]:
    def check(rest: list[str]) -> str | None:
        if any(
            a in ("-d", "--delete") or (sub == "tag" and prefix_of(a, ("--delete",))) for a in rest
        ):
            return f"`git {sub} -d` deletes a ref (a repository's .git is not snapshotted)"
        if sub == "update-ref" and "--stdin" in rest:
            return "`git update-ref --stdin` takes commands from its input, which may delete refs"
        return None

    return check


def _git_rewrites(sub: str) -> Callable[[list[str]], str | None]:
    return lambda rest: f"`git {sub}` rewrites or deletes the repository's history"


_GIT_SUBS: dict[str, Callable[[list[str]], str | None]] = {
    **{sub: _git_pushes(sub) for sub in ("push", "send-pack", "http-push")},
    "stash": _git_stash,
    "reflog": _git_reflog,
    "gc": _git_gc,
    "branch": _git_branch,
    "tag": _git_ref_delete("tag"),
    "update-ref": _git_ref_delete("update-ref"),
    "symbolic-ref": _git_ref_delete("symbolic-ref"),
    **{sub: _git_rewrites(sub) for sub in ("prune", "filter-branch", "filter-repo")},
}


def _aws(name: str, args: list[str]) -> str | None:
    positional = [a for a in args if not a.startswith("-")]
    if positional[:1] == ["s3"] and len(positional) > 1:
        verb = positional[1]
        if verb in ("rm", "rb"):
            return f"`aws s3 {verb}` deletes cloud storage"
        if verb in ("sync", "mv") and (verb == "mv" or "--delete" in args):
            return f"`aws s3 {verb}` deletes objects in cloud storage"
    if len(positional) > 1 and _CLOUD_VERB.match(positional[1]):
        return f"`aws {positional[0]} {positional[1]}` deletes cloud resources"
    return None


#: What each program destroys that no snapshot holds (``mkfs*`` and database clients aside).
_DESTROYERS: dict[str, Callable[[str, list[str]], str | None]] = {
    "git": _git,
    "gh": _gh,
    "npm": _leading(("unpublish",), why="`{}` removes a published package from the registry"),
    **dict.fromkeys(
        ("dropdb", "dropuser"), _leading((), why="`{}` drops it from the database server")
    ),
    "mysqladmin": _mysqladmin,
    "aws": _aws,
    "gsutil": _leading(("rm",), ("rb",), why="`{}` deletes cloud storage"),
    "gcloud": _cloud,
    "az": _cloud,
    "kubectl": _kubectl,
    "helm": _leading(
        ("uninstall",),
        ("delete",),
        ("del",),
        ("un",),
        why="`helm` uninstalls a release from the cluster",
    ),
    **dict.fromkeys(("terraform", "tofu", "pulumi"), _infrastructure),
    **dict.fromkeys(("curl", "wget", "http", "https", "xh"), _http),
    "rsync": _rsync,
    "docker": _leading(
        ("volume", "rm"),
        ("volume", "prune"),
        ("system", "prune"),
        why="`{}` deletes volumes or images",
    ),
}


def _outside_targets(targets: Sequence[str], cwd: Path, root: Path) -> str | None:
    for target in targets:
        where = _resolve(target, cwd)
        if where is not None and not _inside(where, root):
            return f"it changes {target} outside the workspace, where no snapshot can bring it back"
    return None


def _resolve(target: str, cwd: Path) -> Path | None:
    if not target or target in HARMLESS_DEVICES or target.startswith(_NOT_FILES):
        return None
    if target.startswith("~"):
        target = os.path.expanduser(target)
    elif target.startswith(("$HOME", "${HOME}")):
        target = str(Path.home()) + target.split("}", 1)[-1].removeprefix("$HOME")
    elif "$" in target or "`" in target:
        return None  # unknown until it runs; the sandbox is the boundary for these
    if re.match(r"^[^/\s]+:", target):
        return None  # host:path belongs to another machine; rsync's own check covers it
    if "\0" in target:
        return None  # bash stops the word at the NUL; what it names is not known here
    path = Path(target) if os.path.isabs(target) else cwd / target
    return Path(os.path.realpath(path))


def _inside(path: Path, root: Path) -> bool:
    if path.is_relative_to(root):
        return True
    scratch = _scratch()
    if any(root.is_relative_to(t) for t in scratch):
        return False  # a workspace in /tmp: its neighbours there are someone's files too
    return any(path.is_relative_to(t) for t in scratch)


def _scratch() -> Iterable[Path]:
    seen = {os.path.realpath(p) for p in ("/tmp", "/var/tmp", tempfile.gettempdir())}
    return [Path(p) for p in seen]


def _after_cd(words: list[str], cwd: Path) -> Path:
    if len(words) >= 2 and words[0] in ("cd", "pushd"):
        where = _resolve(words[1], cwd)
        if where is not None:
            return where
    if words[:1] == ["cd"] and len(words) == 1:
        return Path.home()
    return cwd
