"""What common programs delete, written as the ``rm`` command that would delete the same
(``find src -delete`` is ``rm -rf src``, ``shred -u key`` is ``rm -f key``), so every rule about
``rm`` and the irreversible check cover them: ``-rf`` for what deletes trees, ``-f`` for what
destroys named files' contents, none for plain removal. An unknown token stays unknown.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from reasonix.safety.shell.git import Form, Token, parse_git

__all__ = ["DELETERS", "deleting_forms"]


def deleting_forms(name: str, rest: Form) -> list[Form]:
    """The ``rm`` forms of what ``name rest…`` deletes (empty when it deletes nothing)."""
    row = DELETERS.get(name)
    return row(rest) if row is not None else []


def _operands(rest: Form, valued: Sequence[str] = ()) -> list[Token]:
    """The words that are not options nor an option's value (``--`` ends the options)."""
    out: list[Token] = []
    skip = False
    ended = False
    for tok in rest:
        if skip:
            skip = False
            continue
        if ended or tok is None or not tok.startswith("-") or tok == "-":
            out.append(tok)
        elif tok == "--":
            ended = True
        elif tok in valued:
            skip = True
    return out


def _short_letters(rest: Form) -> set[str]:
    return {c for t in rest if t and t.startswith("-") and not t.startswith("--") for c in t[1:]}


def _find(rest: Form) -> list[Form]:
    paths: list[Token] = []
    for tok in rest:
        if tok is not None and tok.startswith(("-", "(", "!")):
            break
        paths.append(tok)
    expression = rest[len(paths) :]
    if "-delete" in expression:
        return [("rm", "-rf", *(paths or ["."]))]
    if None in expression:
        # A word known only when it runs (``$x``, a glob matching a file named ``-delete``) may
        # be -delete: every rule about rm matches, but nothing certain is deleted anywhere, so
        # irreversible detection is not told so.
        return [("rm", "-rf", None)]
    return []


def _rsync(rest: Form) -> list[Form]:
    operands = _operands(rest, ("-e", "--rsh", "--rsync-path", "-f", "--filter", "--exclude"))
    out: list[Form] = []
    deletes = any(t is not None and (t == "--del" or t.startswith("--delete")) for t in rest)
    if deletes and operands:
        out.append(("rm", "-rf", operands[-1]))
    if any(t in ("--remove-source-files", "--remove-sent-files") for t in rest) and operands:
        out.append(("rm", *operands[:-1]))
    return out


def _git(rest: Form) -> list[Form]:
    call = parse_git(rest)
    if not call.complete or call.sub is None:
        return []  # an unknown global option or subcommand: the forms have an unknown word
    base: Token = "."
    for option, value in call.options:
        if option in ("-C", "--work-tree"):
            base = None if value is None or base is None else _join(base, value)
    sub, args = call.sub, call.args
    letters = _short_letters(args)
    dry = "n" in letters or "--dry-run" in args
    if sub == "clean" and not dry:
        paths = _operands(args, ("-e", "--exclude"))
        return [("rm", "-rf", *_under(base, paths or ["."]))]
    if sub == "worktree" and args[:1] == ("remove",) and ({"f"} & letters or "--force" in args):
        # --force removes a linked worktree whatever it holds (uncommitted and untracked work)
        return [("rm", "-rf", *_under(base, _operands(args[1:])))]
    if sub == "rm" and not dry and "--cached" not in args:
        flags = ("-r",) if "r" in letters else ()
        return [("rm", *flags, *_under(base, _operands(args, ("--pathspec-from-file",))))]
    return []


def _under(base: Token, paths: Sequence[Token]) -> list[Token]:
    """``paths`` as seen from where the command starts (``git -C dir``)."""
    if base == ".":
        return list(paths)
    if base is None:
        return [None for _ in paths]
    return [None if p is None else _join(base, p) for p in paths]


def _join(base: str, path: str) -> str:
    return os.path.normpath(os.path.join(base, path))


def _shred(rest: Form) -> list[Form]:
    files = _operands(rest, ("-n", "-s", "--iterations", "--size", "--random-source"))
    return [("rm", "-f", *files)] if files else []


def _truncate(rest: Form) -> list[Form]:
    files = _operands(rest, ("-s", "-r", "--size", "--reference", "-o"))
    return [("rm", "-f", *files)] if files else []


def _dd(rest: Form) -> list[Form]:
    """``dd of=FILE`` replaces FILE's contents (unless ``conv=notrunc``), as ``truncate`` does."""
    if any(t is not None and t.startswith("conv=") and "notrunc" in t for t in rest):
        return []
    out: list[Token] = [
        None if t is None else t[3:] for t in rest if t is None or t.startswith("of=")
    ]
    return [("rm", "-f", *out)] if out else []


def _unlink(rest: Form) -> list[Form]:
    return [("rm", *_operands(rest))] if rest else []


def _wipe(rest: Form) -> list[Form]:
    files = _operands(rest)
    return [("rm", "-rf", *files)] if files else []


def _old_style(word: Token) -> bool:
    """tar's first word as letters without a dash (``tar czf out.tgz dir``), naming a file."""
    return word is not None and word.isalpha() and "f" in word


def _removes_files(tok: Token) -> bool:
    """``--remove-files`` or an abbreviation GNU tar accepts (``--remove``, ``--rem``)."""
    return tok is not None and tok.startswith("--rem") and "--remove-files".startswith(tok)


def _tar(rest: Form) -> list[Form]:
    if not any(_removes_files(t) for t in rest):
        return []
    operands = _operands(rest, ("-C", "--directory", "-T", "--files-from", "-X", "--exclude-from"))
    letters = _short_letters(rest)
    # The archive: the value of -f (bundled as in -czf), or the first word of old-style "czf".
    if ("f" in letters or "--file" in rest) and operands:
        operands = operands[1:]
    elif rest[:1] == tuple(operands[:1]) and _old_style(operands[0]):
        operands = operands[2:]
    return [("rm", "-rf", *operands)] if operands else []


#: The programs that delete files themselves, and the ``rm`` forms of what they delete.
DELETERS: dict[str, Callable[[Form], list[Form]]] = {
    "find": _find,
    "rsync": _rsync,
    "git": _git,
    "shred": _shred,
    "truncate": _truncate,
    "dd": _dd,
    "unlink": _unlink,
    "srm": _wipe,
    "wipe": _wipe,
    "tar": _tar,
    "gtar": _tar,
    "bsdtar": _tar,
}
