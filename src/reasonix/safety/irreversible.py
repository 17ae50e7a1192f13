"""Commands that destroy what no snapshot can bring back.

Snapshots cover the files of the workspace. They cannot undo a force-push, a deleted remote
branch, a dropped database, deleted cloud objects or cluster resources, or files changed
outside the workspace. :func:`irreversible_reason` recognises those commands; the permission
engine asks before each of them in every mode, ``yolo`` and ``--yes`` included, unless the
user's own configuration allows that command by an explicit rule (``bash(git push --force*)``).

Recognised (after quotes, wrappers such as ``sudo``/``env``/``timeout`` and ``sh -c`` are seen
through):

- ``git push`` with ``--force``/``-f``/``--force-with-lease``/``--force-if-includes``,
  ``--mirror``, ``--delete``/``-d``, ``--prune``, or a ``+refspec``/``:branch`` argument;
  ``git stash drop|clear``, ``git reflog expire|delete``, ``git gc --prune``, ``git prune``,
  ``git filter-branch``, ``git filter-repo`` (the user's ``.git`` is not snapshotted);
- ``gh repo delete``, ``gh release delete``, ``gh api`` with ``DELETE``; ``npm unpublish``;
- ``dropdb``, ``dropuser``, ``mysqladmin drop``; ``psql``, ``mysql``, ``mariadb``,
  ``sqlcmd``, ``mongosh``/``mongo``, ``redis-cli``, ``clickhouse-client``, ``cqlsh`` given
  ``DROP``, ``TRUNCATE``, ``DELETE FROM``, ``dropDatabase``, ``.drop(``, ``FLUSHALL``/``FLUSHDB``;
- ``aws s3 rm|rb``, ``aws s3 sync --delete``, any ``aws SERVICE delete-*|terminate-*|remove-*``;
  ``gsutil rm|rb``, ``gcloud ... delete``, ``az ... delete``;
- ``kubectl delete|drain``, ``helm uninstall|delete``;
- ``terraform|tofu|pulumi destroy``, ``terraform apply -destroy``, ``terraform state rm``;
- ``docker volume rm|prune``, ``docker system prune``;
- ``curl``/``wget``/``http`` sending ``DELETE``; ``rsync --delete`` to another machine;
- ``mkfs*``; and commands that write or delete files outside the workspace (``rm``, ``mv``,
  ``cp``, ``ln``, ``chmod``, ``chown``, ``truncate``, ``shred``, ``touch``, ``mkdir``,
  ``tee``, ``dd of=``, ``sed -i``, ``find -delete``, redirections such as ``> ~/.bashrc``).
  The system's temporary folders (``/tmp``, ``/var/tmp``, ``$TMPDIR``) and ``/dev/null`` are
  scratch space and do not count, unless the workspace itself is in one of them.
"""

from __future__ import annotations

import os
import re
import shlex
import tempfile
from collections.abc import Iterable
from pathlib import Path

__all__ = ["irreversible_reason"]

_WRAPPERS = frozenset(
    {"sudo", "doas", "env", "nice", "nohup", "time", "timeout", "command", "exec", "builtin",
     "xargs", "stdbuf", "ionice", "chronic", "caffeinate"}
)  # fmt: skip
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
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
    {"--force", "--force-with-lease", "--force-if-includes", "--mirror", "--delete", "--prune"}
)
_CLOUD_VERB = re.compile(r"^(?:delete|terminate|remove|deregister|purge)(?:-|$)")
_REDIRECT = re.compile(r"(?:^|[\s;&|(])(?:\d*>>?|&>>?|>\|)\s*([^\s;&|<>()]+)")
_ALL_ARGS = frozenset(
    {"rm", "rmdir", "unlink", "shred", "truncate", "touch", "mkdir", "chmod", "chown", "chgrp",
     "tee", "mv", "setfacl", "chattr"}
)  # fmt: skip
_LAST_ARG = frozenset({"cp", "ln", "install", "rsync", "scp"})
_HARMLESS = ("/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/fd/")


def irreversible_reason(command: str, workspace: Path) -> str | None:
    """Why ``command`` destroys what no snapshot of ``workspace`` can bring back, or None."""
    from reasonix.safety.shell_scan import command_forms, scan_command

    scan = scan_command(command)
    cwd = Path(os.path.realpath(workspace))
    root = cwd
    for part in scan.parts or [command]:
        for form in sorted(command_forms(part)):
            words = _words(form)
            if not words:
                continue
            why = _destroys(words, form) or _outside(words, form, cwd, root)
            if why:
                return why
        cwd = _after_cd(_words(part), cwd)
    return None


def _words(text: str) -> list[str]:
    try:
        words = shlex.split(text, comments=False)
    except ValueError:
        words = text.split()
    while words and (_ASSIGNMENT.match(words[0]) or words[0].rsplit("/", 1)[-1] in _WRAPPERS):
        head = words.pop(0).rsplit("/", 1)[-1]
        if head in ("timeout", "nice", "ionice", "stdbuf"):
            # Their own options and the duration come before the command.
            while words and (words[0].startswith("-") or words[0][:1].isdigit()):
                words.pop(0)
        elif head in ("sudo", "env", "xargs", "doas"):
            while words and words[0].startswith("-"):
                words.pop(0)
    return words


def _destroys(words: list[str], text: str) -> str | None:
    name = words[0].rsplit("/", 1)[-1]
    args = words[1:]
    if name == "git":
        return _git(args)
    if name == "gh":
        if args[:2] in (["repo", "delete"], ["release", "delete"]):
            return f"`gh {' '.join(args[:2])}` deletes it on GitHub"
        if args[:1] == ["api"] and _method_delete(args):
            return "`gh api` sends a DELETE request to GitHub"
    if name == "npm" and args[:1] == ["unpublish"]:
        return "`npm unpublish` removes a published package from the registry"
    if name in ("dropdb", "dropuser"):
        return f"`{name}` drops it from the database server"
    if name == "mysqladmin" and "drop" in args:
        return "`mysqladmin drop` drops a database"
    if name in _DB_CLIENTS and _DB_DESTROY.search(text):
        return f"`{name}` is given a statement that destroys data in a database"
    if name == "aws":
        return _aws(args)
    if name == "gsutil" and args[:1] and args[0] in ("rm", "rb"):
        return f"`gsutil {args[0]}` deletes cloud storage"
    if name in ("gcloud", "az") and any(_CLOUD_VERB.match(a) for a in args):
        return f"`{name}` deletes cloud resources"
    if name == "kubectl" and any(a in ("delete", "drain") for a in args[:3]):
        return "`kubectl` deletes cluster resources"
    if name == "helm" and args[:1] and args[0] in ("uninstall", "delete", "del", "un"):
        return "`helm` uninstalls a release from the cluster"
    destroy = "destroy" in args or "-destroy" in args or args[:2] == ["state", "rm"]
    if name in ("terraform", "tofu", "pulumi") and destroy:
        return f"`{name}` destroys infrastructure"
    prunes = args[:2] in (["volume", "rm"], ["volume", "prune"], ["system", "prune"])
    if name == "docker" and prunes:
        return f"`docker {' '.join(args[:2])}` deletes volumes or images"
    if name in ("curl", "wget", "http", "https", "xh") and _method_delete(args):
        return f"`{name}` sends a DELETE request"
    remote = bool(args) and re.match(r"^[^/\s]+:", args[-1]) is not None
    if name == "rsync" and remote and any(a.startswith("--delete") for a in args):
        return "`rsync --delete` deletes files on another machine"
    if name.startswith("mkfs"):
        return f"`{name}` formats a file system"
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


def _git(args: list[str]) -> str | None:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in ("-C", "-c", "--git-dir", "--work-tree", "--namespace") else 1
    if i >= len(args):
        return None
    sub, rest = args[i], args[i + 1 :]
    if sub == "push":
        for arg in rest:
            flag = arg.split("=", 1)[0]
            short = arg.startswith("-") and not arg.startswith("--")
            if flag in _PUSH_FLAGS or (short and ("f" in arg or "d" in arg)):
                return "`git push` with this option rewrites or deletes history on the remote"
        positional = [a for a in rest if not a.startswith("-")]
        if any(p.startswith(("+", ":")) for p in positional[1:]):
            return "`git push` with this refspec force-pushes or deletes a remote branch"
    if sub == "stash" and rest[:1] and rest[0] in ("drop", "clear"):
        return (
            f"`git stash {rest[0]}` deletes stashed work (a repository's .git is not snapshotted)"
        )
    if sub == "reflog" and rest[:1] and rest[0] in ("expire", "delete"):
        return "`git reflog` expiry removes the way back to earlier commits"
    if sub == "gc" and any(a.startswith("--prune") for a in rest):
        return "`git gc --prune` deletes unreachable commits for good"
    if sub in ("prune", "filter-branch", "filter-repo"):
        return f"`git {sub}` rewrites or deletes the repository's history"
    return None


def _aws(args: list[str]) -> str | None:
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


def _outside(words: list[str], text: str, cwd: Path, root: Path) -> str | None:
    """Files written or deleted outside the workspace: no snapshot holds them."""
    name = words[0].rsplit("/", 1)[-1]
    targets: list[str] = [m.group(1) for m in _REDIRECT.finditer(text)]
    args = [a for a in words[1:] if not a.startswith("-")]
    if name in _ALL_ARGS:
        if name in ("chmod", "chown", "chgrp", "setfacl", "chattr") and args:
            args = args[1:]  # the mode or owner
        targets += args
    elif name in _LAST_ARG and args:
        targets.append(args[-1])
    elif name == "dd":
        targets += [a[3:] for a in words[1:] if a.startswith("of=")]
    elif name == "sed" and any(a.startswith(("-i", "--in-place")) for a in words[1:]):
        scripted = any(a in ("-e", "-f") or a.startswith(("--expression", "--file")) for a in words)
        targets += args if scripted else args[1:]
    elif name == "find" and any(a in ("-delete", "-exec", "-execdir") for a in words):
        targets += [a for a in words[1:] if not a.startswith(("-", "(", ")", "!", "{"))][:1]
    for target in targets:
        where = _resolve(target, cwd)
        if where is not None and not _inside(where, root):
            return f"it changes {target} outside the workspace, where no snapshot can bring it back"
    return None


def _resolve(target: str, cwd: Path) -> Path | None:
    if not target or target.startswith(_HARMLESS):
        return None
    if target.startswith("~"):
        target = os.path.expanduser(target)
    elif target.startswith(("$HOME", "${HOME}")):
        target = str(Path.home()) + target.split("}", 1)[-1].removeprefix("$HOME")
    elif "$" in target or "`" in target:
        return None  # unknown until it runs; the sandbox is the boundary for these
    if re.match(r"^[^/\s]+:", target):
        return None  # host:path belongs to another machine; rsync's own check covers it
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
