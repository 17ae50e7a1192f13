"""What a shell command may really do, in the terms permission rules are written in.

- :func:`command_forms`: every command a line may run, as token lists where ``None`` is a
  token known only at run time; quotes, a command's folder and wrappers are seen through
  (``env``, ``sudo``, ``bash -c``, ``eval``, ``find -exec``, each program's row of ``_RUNS``),
  and what a program deletes is added as its ``rm`` form (:mod:`~reasonix.safety.shell.deletes`).
  Deny when unsure: what cannot be known is a form of one unknown token, which every rule
  matches. :func:`rule_matches` compares a pattern with the forms, flags normalised on both sides.
- :func:`allow_obstacle`: why no allow rule may cover a line (None when one may), read off each
  simple command's :class:`Step`. The README's "Permissions" section lists both sides' cases.

Rules are the guard rail, the sandbox is the boundary. It runs past 500 lines because both
questions are answered over the same normalised forms, and the per-program checks are a table
that must stay complete in one place to be reviewed as a whole.
"""

from __future__ import annotations

import functools
import glob as globlib
import os
import re
import shlex
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from reasonix.safety.git_repository import (
    COMMAND_KEYS,
    READING_HOOKS,
    find_git_dir,
    has_hooks,
    repository_obstacle,
)
from reasonix.safety.patterns import normalize_command
from reasonix.safety.shell.deletes import deleting_forms
from reasonix.safety.shell.git import Form, Token, parse_git
from reasonix.safety.shell.lexer import Command, Script, Word, embedded_substitutions, parse
from reasonix.safety.shell.programs import program as program_row
from reasonix.safety.shell.programs import writing_obstacle, written_operands

_MAX_FORMS = 256
_MAX_NESTING = 6

# ---------------------------------------------------------------------------------------------
# Forms: what may run


def _tokens(words: Sequence[Word]) -> Form:
    return tuple(w.value if w.literal else None for w in words)


def _references_dev_net(cmd: Command) -> bool:
    words = [*cmd.words, *(r.target for r in cmd.redirects if r.target is not None)]
    return any("/dev/tcp/" in w.value or "/dev/udp/" in w.value for w in words)


def script_forms(script: Script, depth: int = 0) -> set[Form]:
    """Every command ``script`` may run (see the module docstring)."""
    forms: set[Form] = set()
    if script.problems:
        forms.add((None,))
    for cmd in script.commands:
        forms |= simple_forms(cmd, depth)
        if len(forms) > _MAX_FORMS:
            forms.add((None,))
            break
    return forms


def simple_forms(cmd: Command, depth: int = 0) -> set[Form]:
    """Every command one simple command may run: itself, what its wrappers run, and the
    commands in quoted substitutions that bash may still run; an unknown command when it
    opens one of bash's network connections."""
    forms = _unwrap(_tokens(cmd.words), depth) if cmd.words else set()
    if _references_dev_net(cmd):
        forms.add((None,))  # bash's network connections: what goes over them is not known
    return forms | _quoted_substitutions((*cmd.assignments, *cmd.words), depth)


def _quoted_substitutions(words: Sequence[Word], depth: int) -> set[Form]:
    """The commands in ``$(...)`` or backticks written inside quoted text, which bash runs
    when the text later reaches an arithmetic context or an array subscript."""
    forms: set[Form] = set()
    for word in words:
        if not word.literal or ("$(" not in word.value and "`" not in word.value):
            continue
        if depth >= _MAX_NESTING:
            return {(None,)}
        inner = embedded_substitutions(word.value)
        if inner.problems:
            forms.add((None,))
        for cmd in inner.commands:
            if cmd.words:
                forms |= _unwrap(_tokens(cmd.words), depth + 1)
    return forms


def command_forms(command: str) -> set[Form]:
    """:func:`script_forms` of a command line."""
    return script_forms(parse(command))


def word_forms(argv: Sequence[str]) -> list[Form]:
    """Every command one simple command may run, its words as written (``$HOME/x`` stays as
    it is): itself, and what its wrappers and ``sh -c`` text run, in a stable order."""
    return sorted(_unwrap(tuple(argv), 0), key=lambda f: tuple("" if t is None else t for t in f))


def written_targets(cmd: Command) -> list[str]:
    """The files ``cmd``'s redirections write (as written; the harmless devices left out)."""
    return [
        r.target.value
        for r in cmd.redirects
        if r.writes and r.target is not None and r.target.value not in HARMLESS_DEVICES
    ]


def _strip_dir(tokens: Form) -> Form:
    first = tokens[0] if tokens else None
    if first is not None and "/" in first.rstrip("/"):
        return (first.rsplit("/", 1)[1], *tokens[1:])
    return tokens


_PLAIN_WRAPPERS = (
    "taskset", "setsid", "nohup", "command", "builtin", "chrt", "unbuffer", "busybox", "toybox"
)  # fmt: skip
# Options that take a value, for the wrappers we look through.
_VALUE_OPTS: dict[str, frozenset[str]] = {
    "env": frozenset({"-u", "--unset", "-C", "--chdir"}),
    "nice": frozenset({"-n", "--adjustment"}),
    "timeout": frozenset({"-s", "--signal", "-k", "--kill-after"}),
    "exec": frozenset({"-a"}),
    "sudo": frozenset(
        {"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T", "-R", "--user", "--group"}
    ),
    "doas": frozenset({"-u", "-C"}),
    "stdbuf": frozenset({"-i", "-o", "-e"}),
    "xargs": frozenset(
        {"-a", "-d", "-E", "-e", "-I", "-L", "-l", "-n", "-P", "-s", "--arg-file", "--delimiter"}
    ),
    "ionice": frozenset({"-c", "-n", "-p", "-P", "-u"}),
    "time": frozenset({"-f", "-o", "--format", "--output"}),
    "flock": frozenset({"-w", "--timeout", "-E", "--conflict-exit-code"}),
    "watch": frozenset({"-n", "--interval", "-d"}),
    "caffeinate": frozenset({"-t", "-w"}),
    **dict.fromkeys(_PLAIN_WRAPPERS, frozenset()),
}
_SHELLS = frozenset(
    {"bash", "sh", "dash", "zsh", "ksh", "mksh", "ash", "busybox-sh", "rbash", "fish", "tcsh",
     "csh", "yash", "posh", "lksh", "oksh"}
)  # fmt: skip
#: Wrappers whose own options are not modelled: any later word may be the command they run.
_OPAQUE_WRAPPERS = frozenset(
    {"strace", "ltrace", "setpriv", "unshare", "nsenter", "systemd-run", "dbus-launch",
     "dbus-run-session", "fakeroot", "valgrind", "pkexec", "prlimit", "setarch", "linux32",
     "linux64", "faketime", "firejail", "chronic", "numactl", "cgexec", "bwrap", "proot",
     "catchsegv", "torsocks", "proxychains", "proxychains4", "sem", "ts", "entr", "perf", "ssh"}
)  # fmt: skip
#: Scripts a shell or ``source`` reads from a pipe or descriptor: their text is not known.
_STDIN_SCRIPTS = re.compile(r"-|/dev/stdin|/dev/fd/\d+|/proc/(self|\d+)/fd/\d+")
_SHELL_VALUE_OPTS = frozenset({"-o", "+o", "-O", "+O", "--rcfile", "--init-file"})


def runs_commands(name: str) -> bool:
    """Whether program ``name`` runs another command or shell text from its arguments or
    its input (a shell, ``eval``, ``source``, a wrapper such as ``env``, ``sudo``, ``xargs``,
    ``timeout``): the one list of them, which every view reads."""
    return (
        name in _SHELLS
        or name in _VALUE_OPTS
        or name in _OPAQUE_WRAPPERS
        or name in ("eval", "exec", "source", ".", "trap", "su", "runuser", "chroot", "find")
    )


def _unwrap(tokens: Form, depth: int) -> set[Form]:
    """``tokens`` and every command it runs through wrappers."""
    forms: set[Form] = set()
    pending = [tokens]
    while pending and len(forms) <= _MAX_FORMS:
        current = pending.pop()
        if not current or current in forms:
            continue
        forms.add(current)
        stripped = _strip_dir(current)
        if stripped != current:
            pending.append(stripped)
        name = stripped[0]
        rest = stripped[1:]
        if name is None:
            continue
        if depth >= _MAX_NESTING:
            forms.add((None,))
            continue
        # What the program deletes itself, as the rm command that would (rules about rm cover it).
        pending.extend(deleting_forms(name, rest))
        if name in _SHELLS:
            forms |= _shell_forms(rest, depth)
        elif name == "eval":
            forms |= _text_forms(rest, depth)
        elif name == "trap" and rest:
            forms |= _text_forms(rest[:1], depth)
        elif name == "find":
            pending.extend(_find_exec(rest))
        elif name in ("su", "runuser") and "-c" in rest:
            at = rest.index("-c")
            forms |= _text_forms(rest[at + 1 : at + 2], depth)
        elif name in _VALUE_OPTS:
            inner = _after_options(name, rest)
            if inner is not None:
                if name == "xargs":
                    inner = (*inner, None)  # and whatever arrives on stdin
                if name == "watch":
                    forms |= _text_forms(inner, depth)
                    continue
                if name == "flock" and inner[:1] in (("-c",), ("--command",)):
                    forms |= _text_forms(inner[1:2], depth)
                    continue
                pending.append(inner)
        elif name in ("chroot",) and len(rest) > 1:
            pending.append(rest[1:])
        elif name in _OPAQUE_WRAPPERS:
            pending.extend(rest[k:] for k in range(len(rest)))
        else:
            runs = _runs_text(name, rest)
            forms |= runs.text_forms(depth)
            pending.extend(runs.argv)
    return forms


class _Runs:
    """What a command hands to a shell (text) or runs as a command line (argv)."""

    def __init__(self) -> None:
        self.texts: list[Token] = []
        self.argv: list[Form] = []
        self.unknown = False

    @property
    def any(self) -> bool:
        """Whether it runs anything at all."""
        return bool(self.texts or self.argv or self.unknown)

    def text_forms(self, depth: int) -> set[Form]:
        forms: set[Form] = {(None,)} if self.unknown else set()
        for text in self.texts:
            forms |= _text_forms((text,), depth)
        return forms


def _option_values(rest: Form, short: str, longs: tuple[str, ...]) -> list[Token]:
    """The values given to a short option (``-C x``, ``-Cx``, last in a cluster ``-xC v``) or
    to long options (``--to-command=x``, ``--to-command x``)."""
    values: list[Token] = []
    for k, tok in enumerate(rest):
        if tok is None:
            continue
        following = rest[k + 1] if k + 1 < len(rest) else None
        for long in longs:
            if tok == long:
                values.append(following)
            elif tok.startswith(long + "="):
                values.append(tok[len(long) + 1 :])
        if short and tok.startswith("-") and not tok.startswith("--") and short in tok[1:]:
            at = tok.index(short, 1)
            attached = tok[at + 1 :]
            values.append(attached if attached else following)
    return values


def _runs_text(name: str, rest: Form) -> _Runs:
    """Shell text or command lines that programs and builtins run from their arguments (the
    row of :data:`_RUNS` for the program)."""
    runs = _Runs()
    row = _RUNS.get(name)
    if row is not None:
        row(rest, runs)
    return runs


def _runs_tar(rest: Form, runs: _Runs) -> None:
    for value in _option_values(rest, "", ("--checkpoint-action",)):
        if value is None or value.startswith("exec="):
            runs.texts.append(None if value is None else value[5:])
    _texts_of(
        ("I", ("--use-compress-program",)),
        ("F", ("--info-script", "--new-volume-script")),
        ("", ("--to-command", "--rsh-command", "--rmt-command")),
    )(rest, runs)


def _texts_of(*options: tuple[str, tuple[str, ...]]) -> Callable[[Form, _Runs], None]:
    """A row that runs the shell text given to these options (a short letter, long names)."""

    def row(rest: Form, runs: _Runs) -> None:
        for short, longs in options:
            runs.texts += _option_values(rest, short, longs)

    return row


_runs_script = _texts_of(("c", ("--command",)))


def _runs_sg(rest: Form, runs: _Runs) -> None:
    _runs_script(rest, runs)
    if len(rest) > 1 and "-c" not in rest:
        runs.argv.append(rest[1:])


def _runs_vim(rest: Form, runs: _Runs) -> None:
    commands = _option_values(rest, "", ("-c", "--cmd"))
    commands += [t[1:] for t in rest if t is not None and t.startswith("+")]
    for command in commands:
        text = None if command is None else command.lstrip(": ")
        if text is None or text.startswith("!"):
            runs.texts.append(None if text is None else text[1:])
        elif "!" in text or "system" in text or "py" in text or "lua" in text:
            runs.unknown = True


def _runs_gdb(rest: Form, runs: _Runs) -> None:
    for ex in _option_values(rest, "", ("-ex", "--ex", "-eval-command", "--eval-command")):
        if ex is None or re.match(r"\s*(shell\b|!|pipe\b|\||python|py\b)", ex):
            runs.unknown = True


def _runs_sed(rest: Form, runs: _Runs) -> None:
    if None in rest:
        return
    problem = _sed([t for t in rest if t is not None]) or ""
    if "'e'" in problem or "e or w flag" in problem or "-f" in problem or "analysed" in problem:
        runs.unknown = True


def _runs_awk(rest: Form, runs: _Runs) -> None:
    awk_problem = _awk([t for t in rest if t is not None]) if None not in rest else "unknown"
    # writing a file or reading one no word names runs nothing: no unknown command for deny rules
    if awk_problem and "print >" not in awk_problem and "ARGV" not in awk_problem:
        runs.unknown = True


def _runs_hash(rest: Form, runs: _Runs) -> None:
    if any(t in ("-p", "-f") for t in rest):
        runs.unknown = True  # a name bound to any program, or a builtin loaded from a file


def _runs_later(rest: Form, runs: _Runs) -> None:
    runs.unknown = True  # at, batch: commands from stdin or a file, run later


def _runs_source(rest: Form, runs: _Runs) -> None:
    runs.unknown = not rest or rest[0] is None or bool(_STDIN_SCRIPTS.fullmatch(rest[0]))


def _runs_parallel(rest: Form, runs: _Runs) -> None:
    line = rest[: rest.index(":::")] if ":::" in rest else rest
    runs.argv.append((*(t for t in line if t is None or not t.startswith("-")), None))
    runs.texts.append(" ".join(t for t in line if t is not None))


def _git_runs(rest: Form, runs: _Runs) -> None:
    """git's own ``-c`` settings that name a program or an alias, the alias called, and what
    the subcommand runs (:func:`~reasonix.safety.shell.git.parse_git` reads the line)."""
    call = parse_git(rest)
    if not call.complete or call.has("--config-env"):
        runs.unknown = True
        if not call.complete:
            return
    aliases = _git_settings(call.values("-c"), runs)
    if call.sub is None:
        return
    alias = aliases.get(call.sub.lower())
    if alias is not None:
        _git_alias(alias, call.args, runs)
    row = _GIT_SUB_RUNS.get(call.sub)
    if row is not None:
        row(call.sub, call.args, runs)


def _git_settings(settings: Sequence[Token], runs: _Runs) -> dict[str, str]:
    """``-c alias.NAME=VALUE`` given on this command line: git runs VALUE with the words after
    ``NAME`` appended (``git -c alias.r=rm r -r src`` is ``git rm -r src``); ``-c`` keys that
    name a program (:data:`~reasonix.safety.git_repository.COMMAND_KEYS`) run their value."""
    aliases: dict[str, str] = {}
    for setting in settings:
        if setting is None:
            runs.unknown = True
            continue
        key, _, value = setting.partition("=")
        key = key.lower()
        if key.startswith("alias."):
            aliases[key.removeprefix("alias.")] = value
            if value.startswith("!"):
                runs.texts.append(value[1:])
            else:
                runs.argv.append(("git", *value.split()))
        elif COMMAND_KEYS.fullmatch(key):
            runs.texts.append(value)
    return aliases


def _git_alias(alias: str, args: Form, runs: _Runs) -> None:
    if alias.startswith("!"):
        words = None if None in args else " ".join(shlex.quote(t) for t in args if t)
        runs.texts.append(None if words is None else f"{alias[1:]} {words}")
    else:
        runs.argv.append(("git", *alias.split(), *args))


def _git_runs_exec(sub: str, args: Form, runs: _Runs) -> None:
    runs.texts += _option_values(args, "x", ("--exec", "--extcmd", "--tool-cmd"))
    if sub == "filter-branch":
        for k, tok in enumerate(args):
            if tok is not None and tok.endswith("-filter") and tok.startswith("--"):
                runs.texts.append(args[k + 1] if k + 1 < len(args) else None)


def _git_runs_remote(sub: str, args: Form, runs: _Runs) -> None:
    longs = ("--upload-pack", "--receive-pack", "--exec")
    runs.texts += _option_values(args, "u" if sub == "clone" else "", longs)
    for setting in _option_values(args, "", ("-c", "--config")):
        key, _, command = (setting or "").partition("=")
        if setting is None:
            runs.unknown = True
        elif COMMAND_KEYS.fullmatch(key.lower()) or key.lower().startswith("alias."):
            runs.texts.append(command.removeprefix("!"))
    if "foreach" in args:
        body = [t for t in args[args.index("foreach") + 1 :] if t != "--recursive"]
        runs.texts.append(None if None in body else " ".join(t for t in body if t is not None))


def _git_runs_bisect(sub: str, args: Form, runs: _Runs) -> None:
    if args[:1] == ("run",):
        runs.argv.append(args[1:])


_GIT_SUB_RUNS: dict[str, Callable[[str, Form, _Runs], None]] = {
    **dict.fromkeys(("rebase", "difftool", "filter-branch", "mergetool"), _git_runs_exec),
    **dict.fromkeys(
        ("clone", "fetch", "pull", "ls-remote", "push", "archive", "submodule"), _git_runs_remote
    ),
    "bisect": _git_runs_bisect,
}

#: What each program runs from its arguments: shell text or command lines.
_RUNS: dict[str, Callable[[Form, _Runs], None]] = {
    **dict.fromkeys(("mapfile", "readarray"), _texts_of(("C", ()))),
    **dict.fromkeys(("tar", "gtar", "bsdtar"), _runs_tar),
    "git": _git_runs,
    "script": _runs_script,
    "sg": _runs_sg,
    "man": _texts_of(("P", ("--pager",)), ("H", ("--html",)), ("B", ("--browser",))),
    **dict.fromkeys(("vi", "vim", "nvim", "ex", "view", "vimdiff", "gvim", "rvim"), _runs_vim),
    "gdb": _runs_gdb,
    "sed": _runs_sed,
    "gsed": _runs_sed,
    **dict.fromkeys(("awk", "gawk", "mawk", "nawk", "busybox-awk"), _runs_awk),
    "hash": _runs_hash,
    "enable": _runs_hash,
    "at": _runs_later,
    "batch": _runs_later,
    "source": _runs_source,
    ".": _runs_source,
    "parallel": _runs_parallel,
    "zip": _texts_of(("", ("-TT", "--unzip-command"))),
    "rsync": _texts_of(("e", ("--rsh", "--rsync-path"))),
}


def _after_options(name: str, rest: Form) -> Form | None:
    """The command a wrapper runs, after its own options (and a duration, a priority, ...)."""
    takes_value = _VALUE_OPTS[name]
    i = 0
    while i < len(rest):
        tok = rest[i]
        if tok is None:
            return rest[i:]
        if tok == "--":
            i += 1
            break
        if name == "env":
            split = _env_word(rest, i)
            if split is not None:
                if isinstance(split, int):
                    i = split
                    continue
                return split
        if (tok.startswith("-") and tok != "-") or (name == "sudo" and tok.startswith("+")):
            i += 2 if tok in takes_value else 1
            continue
        break
    inner = rest[i:]
    if inner and (name in _LEADING_OPERAND or (name == "nice" and _nice_level(inner[0]))):
        inner = inner[1:]
    return inner or None


#: wrappers whose first operand comes before the command: the duration, the lock file, the
#: CPU mask, the priority
_LEADING_OPERAND = frozenset({"timeout", "flock", "taskset", "chrt"})


def _nice_level(tok: Token) -> bool:
    return tok is not None and re.fullmatch(r"-\d+", tok) is not None


def _env_word(rest: Form, i: int) -> int | Form | None:
    """For ``env``: the next index after an assignment, the command ``-S``/``--split-string``
    gives, or None for an ordinary word."""
    tok = rest[i]
    if tok is None:
        return None
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", tok, re.DOTALL):
        return i + 1
    if tok in ("-S", "--split-string") and i + 1 < len(rest):
        split = rest[i + 1]
        if split is None:
            return (None,)
        return (*tuple(split.split()), *rest[i + 2 :])
    if tok.startswith("--split-string="):
        return (*tuple(tok.partition("=")[2].split()), *rest[i + 1 :])
    return None


def _shell_forms(rest: Form, depth: int) -> set[Form]:
    """``bash -c 'text'``, ``sh -lc 'text'``: the text's forms; a shell reading its commands
    from stdin (``curl ... | sh``) is unknown."""
    i = 0
    command_string = False
    while i < len(rest):
        tok = rest[i]
        if tok is None:
            return {(None,)}
        if tok == "--":
            i += 1
            break
        if tok in _SHELL_VALUE_OPTS:
            i += 2
            continue
        if tok.startswith("--"):
            i += 1
            continue
        if tok[:1] in "-+" and len(tok) > 1:
            if "c" in tok[1:]:
                command_string = True
            if "s" in tok[1:]:
                return {(None,)}
            i += 1
            continue
        break
    if command_string:
        return _text_forms(rest[i : i + 1], depth) if i < len(rest) else {(None,)}
    if i >= len(rest):
        return {(None,)}  # commands from stdin
    if _STDIN_SCRIPTS.fullmatch(rest[i] or "-"):
        return {(None,)}  # a script read from a pipe or a descriptor (process substitution)
    return set()  # a script file: an opaque program, like ./script


def _text_forms(parts: Form, depth: int) -> set[Form]:
    """The forms of shell text given as arguments (``eval a b``, ``bash -c 'a b'``)."""
    if not parts or any(p is None for p in parts):
        return {(None,)}
    text = " ".join(p for p in parts if p is not None)
    return script_forms(parse(text), depth + 1)


def _find_exec(rest: Form) -> list[Form]:
    out: list[Form] = []
    i = 0
    while i < len(rest):
        tok = rest[i]
        if tok in ("-exec", "-execdir", "-ok", "-okdir"):
            j = i + 1
            while j < len(rest) and rest[j] not in (";", "+"):
                j += 1
            if j > i + 1:
                out.append(rest[i + 1 : j])
            i = j
        i += 1
    return out


# ---------------------------------------------------------------------------------------------
# Matching patterns against forms


class _Any:
    """A wildcard element: any run of characters (``alnum`` restricts it to flag letters)."""

    __slots__ = ("alnum",)

    def __init__(self, alnum: bool = False) -> None:
        self.alnum = alnum

    def accepts(self, char: str) -> bool:
        return not self.alnum or char.isalnum()


_STAR = _Any()
_LETTERS = _Any(alnum=True)
Glob = tuple[str | _Any, ...]

# Long options and letter aliases that mean the same as a short flag, per command.
_FLAG_ALIASES: dict[str, dict[str, str]] = {
    "rm": {"--recursive": "r", "--force": "f", "--dir": "d", "--verbose": "v", "R": "r"},
    "cp": {"--recursive": "r", "--force": "f", "R": "r"},
    "mv": {"--force": "f"},
    "ln": {"--force": "f", "--symbolic": "s"},
    "chmod": {"--recursive": "R"},
    "chown": {"--recursive": "R"},
    "chgrp": {"--recursive": "R"},
    "git": {"--force": "f"},
    "shred": {"--remove": "u", "--force": "f"},
    "curl": {"--output": "o", "--insecure": "k"},
}


def _normal(tokens: Sequence[Token]) -> tuple[Token, ...] | None:
    """Flags split, mapped and combined into one sorted cluster right after the command name
    (``rm -r x -f`` → ``rm -fr x``); None when there are no flags to move."""
    if not tokens or tokens[0] is None:
        return None
    name = tokens[0].rsplit("/", 1)[-1]
    aliases = _FLAG_ALIASES.get(name, {})
    letters: set[str] = set()
    rest: list[Token] = []
    ended = False
    for tok in tokens[1:]:
        if tok is None or ended:
            rest.append(tok)
            continue
        if tok == "--":
            ended = True
            rest.append(tok)
            continue
        if tok in aliases and tok.startswith("--"):
            letters.add(aliases[tok])
            continue
        if re.fullmatch(r"-[A-Za-z]+", tok):
            letters.update(aliases.get(c, c) for c in tok[1:])
            continue
        rest.append(tok)
    if not letters:
        return None
    return (name, "-" + "".join(sorted(letters)), *rest)


def _glob_of_form(tokens: Sequence[Token]) -> Glob:
    out: list[str | _Any] = []
    for k, tok in enumerate(tokens):
        if k:
            out.append(" ")
        if tok is None:
            out.append(_STAR)
        else:
            out.extend(tok)
    return tuple(out)


def _pattern_tokens(pattern: str) -> list[str]:
    return [t for t in re.split(r"[ \t]+", pattern.strip()) if t]


def _glob_of_pattern_text(text: str) -> list[str | _Any]:
    out: list[str | _Any] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\" and text[i + 1 : i + 2] in ("*", "\\"):
            out.append(text[i + 1])
            i += 2
            continue
        out.append(_STAR if c == "*" else c)
        i += 1
    return out


@functools.lru_cache(maxsize=1024)
def pattern_globs(pattern: str) -> tuple[Glob, ...]:
    """The globs a command pattern stands for: as written (whitespace collapsed), and with its
    flags normalised, where the cluster accepts more letters (``rm -rf`` covers ``rm -rfv``)."""
    tokens = _pattern_tokens(pattern)
    written: list[str | _Any] = []
    for k, tok in enumerate(tokens):
        if k:
            written.append(" ")
        written.extend(_glob_of_pattern_text(tok))
    globs = [tuple(written)]
    plain = list(tokens)
    flaggy = [t if "*" not in t and "\\" not in t else None for t in plain]
    normal = _normal(flaggy)
    if normal is not None and normal[0] is not None and normal[1] is not None:
        glob: list[str | _Any] = [*normal[0], " ", "-", _LETTERS]
        for letter in normal[1][1:]:
            glob += [letter, _LETTERS]
        # The tokens that were not flags, as written (their wildcards kept).
        rest = [t for t in plain[1:] if t not in _FLAG_ALIASES.get(normal[0], {})]
        rest = [t for t in rest if not re.fullmatch(r"-[A-Za-z]+", t)]
        for tok in rest:
            glob.append(" ")
            glob.extend(_glob_of_pattern_text(tok))
        globs.append(tuple(glob))
    return tuple(globs)


def globs_intersect(a: Glob, b: Glob) -> bool:
    """Whether some string matches both globs."""
    seen: set[tuple[int, int]] = set()
    stack = [(0, 0)]
    la, lb = len(a), len(b)
    while stack:
        i, j = stack.pop()
        if (i, j) in seen:
            continue
        seen.add((i, j))
        if i == la and j == lb:
            return True
        x = a[i] if i < la else None
        y = b[j] if j < lb else None
        if isinstance(x, _Any):
            stack.append((i + 1, j))
            if isinstance(y, str) and x.accepts(y):
                stack.append((i, j + 1))
        if isinstance(y, _Any):
            stack.append((i, j + 1))
            if isinstance(x, str) and y.accepts(x):
                stack.append((i + 1, j))
        if isinstance(x, str) and isinstance(y, str) and x == y:
            stack.append((i + 1, j + 1))
    return False


def rule_matches(pattern: str, forms: Iterable[Form]) -> bool:
    """Whether a command pattern may match one of ``forms`` (see the module docstring)."""
    globs = pattern_globs(pattern)
    for form in forms:
        candidates = [_glob_of_form(form)]
        normal = _normal(form)
        if normal is not None:
            candidates.append(_glob_of_form(normal))
        for candidate in candidates:
            if any(globs_intersect(candidate, g) for g in globs):
                return True
    return False


# ---------------------------------------------------------------------------------------------
# One simple command's record: what the effects record keeps for each step

#: Files whose writing or reading changes nothing and reaches nothing (redirections to them
#: write no file); the one list every view reads.
HARMLESS_DEVICES = frozenset({"/dev/null", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/tty"})
_MAX_GLOB_MATCHES = 2000


@dataclass(frozen=True, slots=True)
class Step:
    """One simple command of a line: the command as parsed; ``text`` as written (whitespace
    collapsed); ``forms``, what it may run (an unknown word None); ``as_written``, the same
    with every word as written (``$HOME/x`` kept); ``redirected``, the files its
    redirections write; ``writes``, every file it writes (redirections and operands);
    ``off_host``, the programs in it that reach another machine; ``side_effects``, why a form
    of it writes or runs what a rule naming its program would not show (``find -exec``,
    ``sort -o``, ``git -c``, ``zip -TT``), one reason per form."""

    command: Command
    text: str
    forms: frozenset[Form]
    as_written: tuple[Form, ...]
    redirected: tuple[str, ...]
    writes: tuple[str, ...]
    off_host: tuple[str, ...]
    side_effects: tuple[str, ...]

    @property
    def runs_unknown(self) -> bool:
        """Whether a form of it runs a word known only at run time (``xargs``' input)."""
        return any(None in form for form in self.as_written)


@functools.lru_cache(maxsize=1024)
def step_of(cmd: Command) -> Step:
    """The :class:`Step` of one simple command, computed once per command."""
    as_written = tuple(word_forms(cmd.argv)) if cmd.words else ()
    redirected = tuple(written_targets(cmd))
    writes = list(redirected)
    off_host = []
    side_effects = []
    for form in as_written:
        words = [t for t in form if t is not None]
        if not words:
            continue
        writes.extend(written_operands(words))
        name = words[0].rsplit("/", 1)[-1]
        if program_row(name).off_host:
            off_host.append(name)
        why = _side_effect(words)
        if why:
            side_effects.append(why)
    return Step(
        command=cmd,
        text=normalize_command(cmd.text),
        forms=frozenset(simple_forms(cmd)),
        as_written=as_written,
        redirected=redirected,
        writes=tuple(dict.fromkeys(w for w in writes if w not in HARMLESS_DEVICES)),
        off_host=tuple(off_host),
        side_effects=tuple(side_effects),
    )


def own_config_target(path: Path, workspace: Path) -> str | None:
    """The protected entry ``path`` falls under (``reasonix.toml``, ``.git/``, a hooks path the
    repository's configuration names, ...: :func:`reasonix.safety.protected.protection`), or
    None."""
    from reasonix.safety.protected import protection

    return protection(path, workspace)


def _side_effect(argv: Sequence[str]) -> str | None:
    """Why this (literal, unwrapped) command is not side-effect-free, or None: its program's
    own check, the options and operands its row of reading programs says write or change
    something, or a command or shell text its words give it to run (a wrapper's command is
    a form of its own, judged as such)."""
    if not argv:
        return None
    name = argv[0].rsplit("/", 1)[-1]
    args = list(argv[1:])
    check = _CHECKS.get(name)
    problem = check(args) if check is not None else None
    problem = problem or writing_obstacle(name, args)
    if problem is None and not runs_commands(name) and _runs_text(name, tuple(args)).any:
        problem = f"{name} runs a command or shell text its words give"
    return problem


def _find(args: list[str]) -> str | None:
    for a in args:
        if a in ("-exec", "-execdir", "-ok", "-okdir", "-delete", "-fls") or a.startswith(
            "-fprint"
        ):
            return f"find {a} runs or writes something"
    return None


# sed's options, read like its getopt does: short letters cluster (``-ne SCRIPT``), ``e``/``f``/
# ``l`` take the rest of the word or the next one, ``i`` an attached suffix; a long option may be
# any unambiguous prefix (``--expr``, ``--line``). BSD's ``-l`` takes no value, so ``-l``'s value
# must be a number (the word a BSD sed reads as its script then runs nothing).
_SED_FLAGS = frozenset("nrEsuzb")
_SED_VALUED = frozenset("efl")
_SED_LONG_FLAGS = (
    "--binary", "--debug", "--follow-symlinks", "--null-data", "--zero-terminated", "--posix",
    "--quiet", "--regexp-extended", "--sandbox", "--separate", "--silent", "--unbuffered",
)  # fmt: skip
_SED_LONG_VALUED = {"--expression": "e", "--file": "f", "--line-length": "l"}
_SED_LONGS = (*_SED_LONG_FLAGS, *_SED_LONG_VALUED, "--in-place", "--help", "--version")


def _sed(args: list[str]) -> str | None:
    scripts: list[str] = []
    operands: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            operands.extend(args[i + 1 :])
            break
        if a == "-" or not a.startswith("-"):
            operands.append(a)
            i += 1
            continue
        taken, problem = _sed_option(args, i, scripts)
        if problem:
            return problem
        i += taken
    if not scripts and operands:
        scripts.append(operands[0])
    for script in scripts:
        problem = _sed_script(script)
        if problem:
            return problem
    return None


def _sed_option(args: list[str], i: int, scripts: list[str]) -> tuple[int, str | None]:
    """Read the option word ``args[i]`` (and its value): how many words it takes, or why it is
    refused; a script it gives goes to ``scripts``."""
    a = args[i]
    if a.startswith("--"):
        key, eq, value = a.partition("=")
        matches = [o for o in _SED_LONGS if o.startswith(key)]
        full = key if key in _SED_LONGS else (matches[0] if len(matches) == 1 else "")
        if full == "--in-place":
            return 1, "sed -i edits files in place"
        if full in _SED_LONG_VALUED:
            if eq:
                return 1, _sed_value(_SED_LONG_VALUED[full], value, scripts)
            if i + 1 >= len(args):
                return 1, _SED_UNREADABLE
            return 2, _sed_value(_SED_LONG_VALUED[full], args[i + 1], scripts)
        return 1, None if full else f"sed option {key} cannot be analysed"
    for j, c in enumerate(a[1:], start=1):
        if c == "i":
            return 1, "sed -i edits files in place"
        if c in _SED_VALUED:
            if j + 1 < len(a):
                return 1, _sed_value(c, a[j + 1 :], scripts)
            if i + 1 >= len(args):
                return 1, _SED_UNREADABLE
            return 2, _sed_value(c, args[i + 1], scripts)
        if c not in _SED_FLAGS:
            return 1, f"sed option -{c} cannot be analysed"
    return 1, None


def _sed_value(letter: str, value: str, scripts: list[str]) -> str | None:
    if letter == "f":
        return "sed -f reads its script from a file"
    if letter == "l":
        return None if value.isdigit() else _SED_UNREADABLE
    scripts.append(value)
    return None


_SED_UNREADABLE = "the sed script cannot be analysed"


def _sed_regex_end(script: str, j: int, delim: str) -> int:
    """Where the regular expression starting at ``j`` ends (its closing ``delim``), or -1."""
    n = len(script)
    while j < n and script[j] != delim:
        if script[j] == "\\":
            j += 1
        elif script[j] == "\n":
            return -1
        j += 1
    return j if j < n else -1


def _sed_address_end(script: str, i: int) -> int:
    """Where the addresses before a command end (-1: a regular expression never closes)."""
    n = len(script)
    while i < n:
        c = script[i]
        if c.isdigit() or c in "$,~+! \t":
            i += 1
        elif c == "/" or (c == "\\" and i + 1 < n):
            start, delim = (i + 1, "/") if c == "/" else (i + 2, script[i + 1])
            end = _sed_regex_end(script, start, delim)
            if end < 0:
                return -1
            i = end + 1
            while c == "/" and i < n and script[i] in "IM":
                i += 1
        else:
            break
    return i


def _sed_substitution(script: str, c: str, i: int) -> tuple[str | None, int]:
    """An ``s`` or ``y`` command at ``i`` (after the letter): why it runs or writes, and where
    it ends."""
    n = len(script)
    if i >= n or script[i] in "\n\\":
        return _SED_UNREADABLE, n
    delim = script[i]
    end = _sed_regex_end(script, i + 1, delim)
    end2 = _sed_regex_end(script, end + 1, delim) if end >= 0 else -1
    if end2 < 0:
        return _SED_UNREADABLE, n
    i = end2 + 1
    if c == "y":
        return None, i
    flags_end = i
    while flags_end < n and script[flags_end] not in ";\n}":
        flags_end += 1
    if "e" in script[i:flags_end] or "w" in script[i:flags_end]:
        return "the sed s command's e or w flag runs a command or writes a file", n
    return None, flags_end


def _sed_word_end(script: str, i: int, ends: str) -> int:
    """Where a word that starts after blanks at ``i`` ends (at one of ``ends``)."""
    n = len(script)
    while i < n and script[i] in " \t":
        i += 1
    while i < n and script[i] not in ends:
        i += 1
    return i


def _sed_script(script: str) -> str | None:
    """Scan a sed script for commands that run or write something."""
    i, n = 0, len(script)
    while i < n:
        if script[i] in " \t\n;}":
            i += 1
            continue
        i = _sed_address_end(script, i)
        if i < 0:
            return _SED_UNREADABLE
        if i >= n:
            break
        c = script[i]
        i += 1
        if c in "ewWrR":
            return f"the sed command {c!r} runs a command or reads or writes a file"
        if c in "sy":
            problem, i = _sed_substitution(script, c, i)
            if problem:
                return problem
        elif c in "aic":  # text to the end of the line
            while i < n and script[i] != "\n":
                i += 1
        elif c in ":btT":  # a label: GNU sed ends it at a blank or ';' (or earlier here)
            i = _sed_word_end(script, i, " \t\n;}")
        elif c in "vlLqQ":  # an optional number (a version for v); what follows is a command
            while i < n and (
                script[i] in " \t" or script[i].isdigit() or (c == "v" and script[i] == ".")
            ):
                i += 1
        elif c not in "{}pPdDnNgGhHxz=F":
            return f"the sed command {c!r} is not known to be side-effect-free"
    return None


_AWK_LOADS = ("--file", "--exec", "--include", "--load")
_AWK_LOAD_WORDS = frozenset({"-f", "-E", "-i", "-l", *_AWK_LOADS})
_AWK_VALUED = frozenset({"-v", "-F", "--assign", "--field-separator"})


def _awk(args: list[str]) -> str | None:
    programs, problem = _awk_programs(args)
    for program in programs:
        problem = problem or _awk_code(program)
    return problem


def _awk_programs(args: list[str]) -> tuple[list[str], str | None]:
    """The awk programs the arguments give (``-e``, ``--source`` or the first operand), or why
    an argument is refused."""
    programs: list[str] = []
    operands: list[str] = []
    i = 0
    while i < len(args):
        taken, program, problem = _awk_word(args, i, bool(operands))
        if problem:
            return [], problem
        if program is not None:
            programs.append(program)
        if not taken:
            operands.append(args[i])
        i += taken or 1
    if not programs and operands:
        programs.append(operands[0])
    return programs, None


def _awk_word(args: list[str], i: int, after_operands: bool) -> tuple[int, str | None, str | None]:
    """How many words awk's argument ``i`` takes (0: it is an operand), the program it gives
    and why it is refused."""
    a = args[i]
    if a in _AWK_LOAD_WORDS:
        return 1, None, f"awk {a} loads a program or an extension from a file"
    more = i + 1 < len(args)
    if a in _AWK_VALUED and more:
        return 2, None, None
    if a in ("-e", "--source") and more:
        return 2, args[i + 1], None
    if after_operands or not a.startswith("-") or a == "-":
        return 0, None, None
    if a.startswith("-W"):  # gawk's -W source=..., -W file=...
        return 1, None, "awk -W options are not modelled"
    name, eq, value = a.partition("=")
    if a.startswith("--") and len(name) > 2:
        # gawk takes any unambiguous prefix of a long option, the value after = or next
        if any(o.startswith(name) for o in _AWK_LOADS):
            return 1, None, f"awk {name} loads a program or an extension from a file"
        if "--source".startswith(name):
            if eq:
                return 1, value, None
            return (2, args[i + 1], None) if more else (1, None, "awk --source without a program")
    elif len(a) > 2 and a[1] in "fEil":
        return 1, None, f"awk -{a[1]} loads a program or an extension from a file"
    elif a.startswith("-e") and len(a) > 2:
        return 1, a[2:], None  # -ePROGRAM
    return 1, None, None


def _awk_code(program: str) -> str | None:
    """Why an awk program may do more than read its input and print (the program's own text,
    not the command line, is what these patterns read)."""
    code = re.sub(r'"(?:[^"\\]|\\.)*"', '""', program)
    if re.search(r"@load\b", code):
        return "gawk @load loads an extension"
    if "@" in code:  # @include "file" reads code never checked; @f() calls f indirectly
        return "gawk @include and indirect calls (@name()) run code the check cannot see"
    if re.search(r"\bsystem\s*\(", code):
        return "awk system() runs a command"
    if "|" in code.replace("||", ""):
        return "an awk pipe runs a command"
    if re.search(r"\bgetline\b", code):
        return "awk getline reads files or runs commands"
    if re.search(r"\bARGV\b", code):
        return "an awk program that sets ARGV reads files no word of the line names"
    for statement in re.split(r"[;{}\n]", code):
        if re.search(r"\bprintf?\b", statement) and ">" in statement:
            return "awk print > writes a file"
    return None


def _git(args: list[str]) -> str | None:
    call = parse_git(tuple(args))
    if call.has("-c", "--config-env"):
        return "git -c changes configuration (which may run commands)"
    if call.has("--exec-path"):
        return "git --exec-path chooses the programs git runs"
    sub = call.sub or ""
    for a in call.args:
        problem = _git_argument(sub, a or "")
        if problem:
            return problem
    return None


#: long options of git's subcommands that write a file or run a command; git accepts an
#: abbreviation of a long option, which counts as the option (``--out=x`` is ``--output=x``)
_GIT_WRITING_LONGS = {
    "--output": "git --output writes a file",
    "--ext-diff": "git --ext-diff runs an external diff program",
    "--open-files-in-pager": "git grep -O runs a pager",
    "--template": "git --template copies hooks from a folder, which then run",
    "--exec": "git --exec runs a command",
    "--upload-pack": "git --upload-pack runs a command",
    "--receive-pack": "git --receive-pack runs a command",
    "--extcmd": "git --extcmd runs a command",
}


def _git_argument(sub: str, a: str) -> str | None:
    """Why one argument of ``git SUB`` makes it write or run something, or None."""
    if a.startswith("--") and len(a) > 3:
        key = a.split("=", 1)[0]
        for option, why in _GIT_WRITING_LONGS.items():
            if option.startswith(key):
                return why
    if sub in ("clone", "submodule") and (
        a in ("-c", "--config") or a.startswith("--config=") or re.fullmatch(r"-c.+", a)
    ):
        return f"git {sub} -c sets configuration (which may run commands)"
    if sub == "clone" and (a == "-u" or re.fullmatch(r"-u.+", a)):
        return "git clone -u runs a command as the upload pack"
    if sub == "archive" and _short_option(a, "o", ""):
        return "git archive -o writes a file"
    if a == "-O" or (sub == "grep" and _short_option(a, "O", "efABCm")):
        return "git grep -O runs a pager"  # -O<cmd>, -nO<cmd>: the pager attached
    if a == "-x":
        return f"git {a} runs a command"
    return None


def _short_option(word: str, letter: str, valued: str) -> bool:
    """Whether ``word`` is a cluster of short options (``-nO...``) that holds ``letter``
    before any option in ``valued`` (one taking the rest of the word as its value)."""
    if not word.startswith("-") or word.startswith("--"):
        return False
    for ch in word[1:]:
        if ch == letter:
            return True
        if ch in valued or not ch.isalnum():
            return False
    return False


_GIT_HOOK_COMMANDS = frozenset(
    {"commit", "merge", "rebase", "checkout", "switch", "pull", "push", "am", "cherry-pick",
     "revert", "gc", "worktree", "clone", "reset", "stash", "apply", "fetch", "maintenance"}
)  # fmt: skip


def _git_repository(argv: Sequence[str], paths: _Paths) -> str | None:
    """Why the repository an allowed git command works in makes it run something: its own
    configuration names a program, or it holds a hook the subcommand runs."""
    call = parse_git(tuple(argv[1:]))
    start = paths.cwd
    git_dir: Path | None = None
    for option, value in call.options:
        if value is None:
            continue
        if option == "-C":
            start = Path(os.path.realpath(start / os.path.expanduser(value)))
        elif option == "--git-dir":
            git_dir = paths.resolve(value)
    sub = call.sub or ""
    if git_dir is not None:
        problem = repository_obstacle(git_dir / "..") if git_dir.name == ".git" else None
        if problem is None and git_dir.name != ".git":
            return "git --git-dir names a repository that cannot be checked"
    else:
        problem = repository_obstacle(start)
        git_dir = find_git_dir(start)
    if problem:
        return problem
    if git_dir is not None and (
        (sub in _GIT_HOOK_COMMANDS and has_hooks(git_dir)) or has_hooks(git_dir, READING_HOOKS)
    ):
        return f"git {sub} runs the repository's own hooks"
    return None


def _tar(args: list[str]) -> str | None:
    """tar's writing modes, any checkpoint action and ``-I``/``-F`` in the old style too (the
    options that run a command are its row of ``_RUNS``)."""
    if any(a.startswith("--checkpoint-action") for a in args):
        return "tar --checkpoint-action runs a command"
    flags = "".join(a[1:] for a in args if a.startswith("-") and not a.startswith("--"))
    if args and not args[0].startswith("-"):
        flags += args[0]  # the old style: tar xvf a.tar
    if "I" in flags or "F" in flags:
        return "tar -I/-F runs a command"
    longs = {a.split("=", 1)[0] for a in args if a.startswith("--")}
    if set(flags) & set("xcruA") or longs & {
        "--extract", "--get", "--create", "--append", "--update", "--catenate", "--delete",
        "--concatenate",
    }:  # fmt: skip
        return "tar writes files (only listing an archive is side-effect-free)"
    return None


def _less(args: list[str]) -> str | None:
    for a in args:
        if a.startswith(("-o", "-O", "--log-file", "--LOG-FILE", "-k", "--lesskey")):
            return f"less {a.split('=', 1)[0]} writes or loads a file"
        if a.startswith("+") and "!" in a:
            return "less +! runs a command"
    return None


def _tee(args: list[str]) -> str | None:
    files = [a for a in args if not a.startswith("-") and a not in HARMLESS_DEVICES]
    return "tee writes files" if files else None


def _test(args: list[str]) -> str | None:
    """``[[ -v x ]]`` (``test``, ``[`` and ``printf`` are rows of the reading table, whose
    ``-v`` writes)."""
    if "-v" in args:
        return "test -v evaluates an array subscript, which can run commands"
    return None


_CHECKS = {
    "find": _find, "git": _git, "tee": _tee, "[[": _test, "less": _less,
    **dict.fromkeys(("sed", "gsed"), _sed),
    **dict.fromkeys(("awk", "gawk", "mawk", "nawk"), _awk),
    **dict.fromkeys(("tar", "gtar", "bsdtar"), _tar),
}  # fmt: skip


class _Paths:
    """Resolves the path-like words of a line from the folder each command runs in."""

    def __init__(self, workspace: Path, roots: Sequence[Path], confined: bool = True) -> None:
        self.workspace = workspace
        self.roots = tuple(roots) or (workspace,)
        self.cwd = workspace
        #: False when where a command reads does not matter (a snapshot's question)
        self.confined = confined

    def inside(self, real: Path) -> bool:
        return any(real == r or real.is_relative_to(r) for r in self.roots)

    def resolve(self, value: str) -> Path:
        expanded = os.path.expanduser(value) if value.startswith("~") else value
        return Path(os.path.realpath(os.path.join(self.cwd, expanded)))

    def outside(self, value: str) -> str | None:
        """Why reading ``value`` would go outside the workspace, or None."""
        if not self.confined or value in HARMLESS_DEVICES:
            return None
        real = self.resolve(value)
        if str(real) in HARMLESS_DEVICES:
            return None
        if not self.inside(real):
            return f"it names {value!r}, outside the workspace"
        for system in ("/proc", "/sys", "/dev"):
            if real == Path(system) or real.is_relative_to(system):
                return f"it names {value!r}, under {system}"
        return None


def _path_candidates(word: str, cwd: Path) -> list[str]:
    """The parts of an argument that may name a file: path-like text, or a name that exists
    (a symlink in the workspace may point anywhere)."""
    values = [word]
    if word.startswith("--") and "=" in word:
        values.append(word.partition("=")[2])
    elif word.startswith("-") and len(word) > 2:
        values.append(word[2:])  # -f/etc/passwd: a short option with its value attached
    return [
        v
        for v in values
        if v
        and (
            "/" in v
            or v.startswith("~")
            or v in (".", "..")
            or os.path.lexists(os.path.join(cwd, v))
        )
    ]


def allow_obstacle(
    script: Script, workspace: Path, roots: Sequence[Path] = (), *, confined: bool = True
) -> str | None:
    """Why no allow rule may cover ``script``, or None (see the module docstring): read off
    each simple command's :class:`Step` (what it runs, writes and hides), plus what is the
    allow side's own, where its words point. ``confined=False`` leaves out where it reads
    (outside the workspace, a protected file named): what a snapshot needs to know is only
    whether it changes anything."""
    if script.problems:
        return f"the command cannot be analysed ({script.problems[0]})"
    if script.substitutions:
        return "the command hides parts in $(...), backticks or process substitution"
    real_roots = [Path(os.path.realpath(r)) for r in roots]
    paths = _Paths(Path(os.path.realpath(workspace)), real_roots, confined)
    for cmd in script.commands:
        problem = _step_obstacle(step_of(cmd), paths)
        if problem:
            return problem
    return None


def _step_obstacle(step: Step, paths: _Paths) -> str | None:
    cmd = step.command
    problem = _redirect_obstacle(step, paths)
    if problem:
        return problem
    if cmd.assignments:
        return "the command sets environment variables for what it runs"
    if not cmd.words:
        return None
    for word in cmd.words:
        if word.expands or word.tilde or word.brace:
            return f"the word {word.text!r} is known only when the command runs"
    if step.side_effects:
        return step.side_effects[0]
    if step.runs_unknown:
        return "the command runs something that is known only at run time"
    for form in step.as_written:
        if form[0] is not None and form[0].rsplit("/", 1)[-1] == "git":
            problem = _git_repository([t for t in form if t is not None], paths)
            if problem:
                return problem
    argv = cmd.argv
    name = argv[0].rsplit("/", 1)[-1]
    if name in ("cd", "pushd", "popd"):
        return _cd_obstacle(name, argv, paths)
    names = program_row(name).names
    return None if names == "none" else _paths_obstacle(cmd, names == "read", paths)


def _redirect_obstacle(step: Step, paths: _Paths) -> str | None:
    for redirect in step.command.redirects:
        target = redirect.target
        if target is None:
            return "a redirection has no target"
        if redirect.op in ("<<", "<<-", "<<<"):
            continue
        if not target.literal:
            return "a redirection's target is known only when it runs"
        if redirect.reads:
            problem = paths.outside(target.value)
            if problem:
                return f"the command reads a file outside the workspace ({problem})"
    return "the command writes a file through a redirection" if step.redirected else None


def _cd_obstacle(name: str, argv: Sequence[str], paths: _Paths) -> str | None:
    if len(argv) != 2 or argv[1] == "-":
        return f"{name} without a folder goes outside the workspace"
    real = paths.resolve(argv[1])
    if paths.confined and not paths.inside(real):
        return f"cd {argv[1]!r} leaves the workspace"
    paths.cwd = real
    return None


def _paths_obstacle(cmd: Command, reads: bool, paths: _Paths) -> str | None:
    """Why a word of ``cmd`` names a file outside the workspace or, unless its program only
    reads what it names (``reads``), a protected one."""
    for word in cmd.words[1:]:
        if word.glob:
            candidates = _expand_glob(word.value, paths)
            if candidates is None:
                return f"the pattern {word.text!r} matches too many files to check"
        else:
            candidates = _path_candidates(word.value, paths.cwd)
        for candidate in candidates:
            problem = paths.outside(candidate)
            if problem:
                return f"the command reads outside the workspace ({problem})"
        if reads or not paths.confined:
            continue
        for candidate in (*candidates, word.value):
            protected = own_config_target(paths.resolve(candidate), paths.workspace)
            if protected:
                return f"the command may change what runs later outside the sandbox ({protected})"
    return None


def _expand_glob(pattern: str, paths: _Paths) -> list[str] | None:
    base = os.path.join(paths.cwd, os.path.expanduser(pattern))
    matches = []
    for k, match in enumerate(globlib.iglob(base, recursive=False)):
        if k >= _MAX_GLOB_MATCHES:
            return None
        matches.append(match)
    return matches or [pattern]
