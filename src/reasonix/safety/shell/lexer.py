"""A lexer for the part of the bash language permission rules need to see.

:func:`parse` turns a command line into every simple command it may run, nested ones included
(subshells, groups, substitutions, here-documents, ``${...}``, arithmetic, loops, ``case``,
functions), each with its words (quotes removed, expansions marked), leading assignments and
redirections, in bash's own order of reading. What it cannot analyse is listed in
:attr:`Script.problems`: an allow rule treats any problem as "not covered", a deny rule as a
possible match. Not modelled: aliases (reported as a problem), ``extglob``, programs' arguments.

It runs past 500 lines because it is one recursive-descent parser: quoting, expansions,
here-documents, compound commands and nesting share one cursor and one list of problems.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

#: Words that open or continue a compound command when they stand in command position.
_OPENERS = frozenset({"if", "then", "elif", "else", "do", "while", "until", "{", "!", "time"})
#: Words that close one; redirections may follow them (``done > log``).
_CLOSERS = frozenset({"fi", "done", "}", "esac"})
_ASSIGN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_REDIR_OPS = (
    "&>>",
    "<<<",
    "<<-",
    "&>",
    ">>",
    ">|",
    ">&",
    "<&",
    "<>",
    "<<",
    ">",
    "<",
)
_METACHARS = frozenset(" \t\n;&|<>()")
_MAX_DEPTH = 40
_MAX_LENGTH = 200_000


@dataclass(frozen=True, slots=True)
class Word:
    """One shell word. ``value`` is the word with quotes and backslashes removed (expansions
    left as written); ``literal`` is True when ``value`` is exactly what the command receives
    (no ``$``-expansion, substitution, unquoted glob, tilde or brace expansion)."""

    text: str
    value: str
    expands: bool = False
    glob: bool = False
    tilde: bool = False
    brace: bool = False

    @property
    def literal(self) -> bool:
        return not (self.expands or self.glob or self.tilde or self.brace)


@dataclass(frozen=True, slots=True)
class Redirect:
    """A redirection: ``op`` (``>``, ``>>``, ``&>``, ``<``, ``<<``, ``<<<``, ``>&``, ...), the
    file descriptor written before it (``"2"`` or ``""``) and the target word (the delimiter for
    a here-document)."""

    op: str
    fd: str
    target: Word | None

    @property
    def writes(self) -> bool:
        """Whether it opens a file for writing (``2>&1`` and ``>&-`` duplicate or close one)."""
        if self.op in (">&", "<&"):
            target = self.target.value if self.target else ""
            return self.op == ">&" and not re.fullmatch(r"[0-9]+-?|-", target)
        return self.op in (">", ">>", ">|", "&>", "&>>", "<>")

    @property
    def reads(self) -> bool:
        """Whether it opens a file for reading (``< file``, ``<> file``)."""
        return self.op in ("<", "<>")


@dataclass(frozen=True, slots=True)
class Command:
    """One simple command: assignments, words, redirections, and the source text it came from.
    ``context`` says where it sits: ``top``, ``subshell``, ``group``, ``substitution``,
    ``process``, ``heredoc``, ``function``, ``loop``, ``case``."""

    words: tuple[Word, ...]
    assignments: tuple[Word, ...] = ()
    redirects: tuple[Redirect, ...] = ()
    text: str = ""
    context: str = "top"

    @property
    def argv(self) -> tuple[str, ...]:
        """The words' values (expansions left as written)."""
        return tuple(w.value for w in self.words)


@dataclass(frozen=True, slots=True)
class Script:
    """What :func:`parse` found: every simple command (in source order, nested ones included),
    whether any of them runs inside a substitution, and what could not be analysed."""

    commands: tuple[Command, ...]
    problems: tuple[str, ...] = ()
    substitutions: bool = False

    @property
    def sure(self) -> bool:
        """True when the lexer understood the whole line."""
        return not self.problems


class _Incomplete(Exception):
    """Ran out of input inside a construct."""


@dataclass
class _State:
    commands: list[Command] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    substitutions: bool = False
    #: here-documents waiting for the next newline: (delimiter, strip tabs, body expands)
    heredocs: list[tuple[str, bool, bool]] = field(default_factory=list)


#: what :meth:`_Parser.command_step` says: the simple command ends here, or goes on
_DONE = "done"
_NEXT = "next"


@dataclass
class _Simple:
    """The simple command being read: where its text starts, where it runs, what it has."""

    start: int
    context: str
    words: list[Word] = field(default_factory=list)
    assignments: list[Word] = field(default_factory=list)
    redirects: list[Redirect] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.words and not self.assignments


class _Parser:
    def __init__(self, text: str, state: _State, depth: int = 0) -> None:
        self.s = text
        self.i = 0
        self.n = len(text)
        self.state = state
        self.depth = depth

    # -- helpers ---------------------------------------------------------------------------------

    def problem(self, what: str) -> None:
        if what not in self.state.problems:
            self.state.problems.append(what)

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.s[j] if j < self.n else ""

    def startswith(self, token: str | tuple[str, ...]) -> bool:
        return self.s.startswith(token, self.i)

    def skip_blanks(self) -> None:
        while self.i < self.n:
            c = self.s[self.i]
            if c in " \t":
                self.i += 1
            elif c == "\\" and self.peek(1) == "\n":
                self.i += 2
            else:
                break

    def skip_comment(self) -> None:
        if self.peek() == "#":
            end = self.s.find("\n", self.i)
            self.i = self.n if end == -1 else end

    def newline(self) -> None:
        """Consume a newline and the bodies of the here-documents waiting for it."""
        self.i += 1
        pending, self.state.heredocs = self.state.heredocs, []
        for delimiter, strip_tabs, expand in pending:
            body_lines: list[str] = []
            # Without its delimiter line bash ends the body at the end of input (with a warning).
            while self.i < self.n:
                end = self.s.find("\n", self.i)
                line = self.s[self.i : self.n if end == -1 else end]
                self.i = self.n if end == -1 else end + 1
                check = line.lstrip("\t") if strip_tabs else line
                if check == delimiter:
                    break
                body_lines.append(line)
            if expand:
                _scan_expansions("\n".join(body_lines), self.state, self.depth + 1, "heredoc")

    # -- lists -----------------------------------------------------------------------------------

    def parse_list(self, context: str, stop: str = "") -> None:
        """Commands until end of input or the closing ``stop`` (``)`` or ``esac``/``;;`` for
        ``case``), which is not consumed."""
        if self.depth > _MAX_DEPTH:
            self.problem("the command nests too deeply to analyse")
            self.i = self.n
            return
        expect_command = True
        while self.i < self.n:
            self.skip_blanks()
            if self.i >= self.n:
                break
            c = self.peek()
            if c == "#":
                self.skip_comment()
                continue
            if c == "\n":
                self.newline()
                expect_command = True
                continue
            if stop == ")" and c == ")":
                return
            if stop == "case" and self.startswith((";;", ";&")):
                return
            if c in ";&|":
                op = self.read_operator()
                if op in (";;", ";&", ";;&"):
                    self.problem(f"unexpected {op!r}")
                expect_command = True
                continue
            if c == ")":
                self.problem("an unmatched ')'")
                self.i += 1
                continue
            if not expect_command:
                self.problem("unexpected text after a command")
            if stop == "case" and self.word_ahead() == "esac":
                return
            self.parse_command(context, stop)
            expect_command = False

    def read_operator(self) -> str:
        for op in (";;&", "&&", "||", ";;", ";&", "|&", ";", "&", "|"):
            if self.startswith(op):
                self.i += len(op)
                return op
        self.i += 1
        return self.s[self.i - 1]

    def word_ahead(self) -> str:
        """The plain word at the cursor (for keyword checks), without consuming it."""
        j = self.i
        while j < self.n and self.s[j] not in _METACHARS:
            if self.s[j] in "'\"\\$`":
                return ""
            j += 1
        return self.s[self.i : j]

    # -- commands --------------------------------------------------------------------------------

    def parse_command(self, context: str, stop: str) -> None:
        cmd = _Simple(self.i, context)
        while self.i < self.n:
            self.skip_blanks()
            c = self.peek()
            if not c or c in "\n;&|)":
                break
            if c == "#" and (self.i == cmd.start or self.s[self.i - 1] in " \t"):
                self.skip_comment()
                break
            step = self.command_step(cmd, c)
            if step == _DONE:
                return
            if step == _NEXT:
                continue
            word = self.read_word(assignment_ok=not cmd.words)
            if word is None:
                break
            if not cmd.words and _ASSIGN.match(word.text) and not word.text.startswith("="):
                cmd.assignments.append(word)
            else:
                cmd.words.append(word)
        text = self.s[cmd.start : self.i].strip()
        if cmd.words or cmd.assignments or cmd.redirects:
            done = Command(
                tuple(cmd.words), tuple(cmd.assignments), tuple(cmd.redirects), text, cmd.context
            )
            self.state.commands.append(done)
            self.check_command(done)

    def command_step(self, cmd: _Simple, c: str) -> str | None:
        """What comes next in a simple command besides a word: a parenthesis, a redirection,
        or a keyword in command position. :data:`_DONE` when the command ends here,
        :data:`_NEXT` when more follows, None when a word comes."""
        if c == "(":
            return self.paren(cmd)
        redirect = self.try_redirect()
        if redirect is not None:
            cmd.redirects.append(redirect)
            return _NEXT
        if cmd.words:
            return None
        return self.keyword(cmd)

    def paren(self, cmd: _Simple) -> str:
        if cmd.empty:
            if self.startswith("(("):
                self.parse_arithmetic_command()
                return _DONE
            self.i += 1
            self.nested(")", "subshell")
            self.after_compound(cmd.context, cmd.redirects)
            return _DONE
        if len(cmd.words) == 1 and self.startswith(("()", "( )")):
            # name() { body; }: the body's commands count wherever it is called.
            self.i = self.s.index(")", self.i) + 1
            cmd.words.clear()
            cmd.context = "function"
            return _NEXT
        self.problem("an unexpected '('")
        self.i += 1
        return _NEXT

    def keyword(self, cmd: _Simple) -> str | None:
        """A reserved word in command position (none counts after an assignment)."""
        keyword = self.word_ahead()
        if keyword == "coproc":
            self.problem("coproc is not analysed")
        if cmd.assignments:
            return None
        if keyword in _OPENERS:
            self.i += len(keyword)
            if keyword == "time":
                self.skip_blanks()
                if self.word_ahead() == "-p":
                    self.i += 2
            cmd.start = self.i
            return _NEXT
        if keyword in _CLOSERS:
            self.i += len(keyword)
            self.after_compound(cmd.context, cmd.redirects)
            return _DONE
        compound = self.compound_keyword(keyword, cmd.context)
        if compound:
            return _DONE
        if keyword == "function":
            self.i += len(keyword)
            self.skip_blanks()
            self.read_word()
            self.skip_blanks()
            if self.startswith("()"):
                self.i += 2
            cmd.context = "function"
            cmd.start = self.i
            return _NEXT
        return None

    def compound_keyword(self, keyword: str, context: str) -> bool:
        """``for``/``select``, ``case``, ``[[``: parsed whole; whether ``keyword`` was one."""
        if keyword in ("for", "select"):
            self.parse_for(keyword)
        elif keyword == "case":
            self.parse_case()
        elif keyword == "[[":
            self.parse_conditional(context)
        else:
            return False
        return True

    def check_command(self, cmd: Command) -> None:
        if cmd.argv[:1] == ("shopt",) and "expand_aliases" in cmd.argv:
            self.problem("aliases are turned on, and aliases are not analysed")
        if cmd.argv[:1] == ("alias",) and len(cmd.argv) > 1:
            self.problem("alias definitions are not analysed")

    def nested(self, close: str, context: str) -> None:
        inner = _Parser(self.s, self.state, self.depth + 1)
        inner.i = self.i
        inner.parse_list(context, stop=close)
        self.i = inner.i
        if self.peek() == close:
            self.i += 1
        else:
            raise _Incomplete(f"a '{close}' is missing")

    def after_compound(self, context: str, redirects: list[Redirect]) -> None:
        """Redirections after ``)``, ``}``, ``done``, ``fi``, ``esac`` apply to all of it."""
        while True:
            self.skip_blanks()
            redirect = self.try_redirect()
            if redirect is None:
                break
            redirects.append(redirect)
        if redirects:
            self.state.commands.append(Command((), (), tuple(redirects), "", context))

    def parse_for(self, keyword: str) -> None:
        self.i += len(keyword)
        self.skip_blanks()
        if self.startswith("(("):
            self.parse_arithmetic_command()
            return
        name = self.read_word()
        if name is None or not _NAME.fullmatch(name.value):
            self.problem(f"a {keyword} loop without a variable name")
        self.skip_blanks()
        if self.word_ahead() == "in":
            self.i += 2
            while True:
                self.skip_blanks()
                c = self.peek()
                if not c or c in ";\n":
                    break
                if self.read_word() is None:
                    break
        # The body follows ``do`` and runs as ordinary commands.

    def parse_case(self) -> None:
        self.i += 4
        self.skip_blanks()
        self.read_word()
        self.skip_blanks()
        while self.peek() == "\n":
            self.newline()
            self.skip_blanks()
        if self.word_ahead() != "in":
            self.problem("a case without 'in'")
            return
        self.i += 2
        while self.i < self.n:
            self.skip_blanks()
            c = self.peek()
            if c == "\n":
                self.newline()
                continue
            if c == "#":
                self.skip_comment()
                continue
            if self.word_ahead() == "esac":
                self.i += 4
                self.after_compound("case", [])
                return
            if c == "(":
                self.i += 1
            while True:  # patterns, separated by |
                self.skip_blanks()
                if self.read_word() is None:
                    break
                self.skip_blanks()
                if self.peek() == "|":
                    self.i += 1
                    continue
                break
            if self.peek() != ")":
                self.problem("a case pattern without ')'")
                return
            self.i += 1
            inner = _Parser(self.s, self.state, self.depth + 1)
            inner.i = self.i
            inner.parse_list("case", stop="case")
            self.i = inner.i
            for op in (";;&", ";;", ";&"):
                if self.startswith(op):
                    self.i += len(op)
                    break
        raise _Incomplete("'esac' is missing")

    def parse_conditional(self, context: str) -> None:
        """``[[ ... ]]``: words, where ``<``, ``>``, ``&&`` and ``||`` are operators of the test."""
        start = self.i
        self.i += 2
        words = [Word("[[", "[[")]
        while True:
            self.skip_blanks()
            c = self.peek()
            if not c:
                raise _Incomplete("']]' is missing")
            if c == "\n":
                self.newline()
                continue
            if self.word_ahead() == "]]":
                self.i += 2
                words.append(Word("]]", "]]"))
                break
            if c in "<>&|()!":
                self.i += 2 if self.s[self.i : self.i + 2] in ("&&", "||") else 1
                continue
            word = self.read_word()
            if word is None:
                self.i += 1
                continue
            words.append(word)
        redirects: list[Redirect] = []
        cmd = Command(tuple(words), (), (), self.s[start : self.i], context)
        self.state.commands.append(cmd)
        self.after_compound(context, redirects)

    def parse_arithmetic_command(self) -> None:
        self.i += 2
        body = self.until_double_paren()
        _scan_expansions(body, self.state, self.depth + 1, "substitution")
        self.after_compound("top", [])

    def until_double_paren(self) -> str:
        """Text up to the ``))`` closing an arithmetic expression (consumed)."""
        depth = 0
        start = self.i
        while self.i < self.n:
            c = self.s[self.i]
            if c == "(":
                depth += 1
            elif c == ")":
                if depth == 0 and self.peek(1) == ")":
                    body = self.s[start : self.i]
                    self.i += 2
                    return body
                depth -= 1
            self.i += 1
        raise _Incomplete("'))' is missing")

    # -- redirections ----------------------------------------------------------------------------

    def try_redirect(self) -> Redirect | None:
        j = self.i
        while j < self.n and self.s[j].isdigit():
            j += 1
        if j < self.n and self.s[j] == "{":  # {fd}>file
            close = self.s.find("}", j)
            if close != -1 and _NAME.fullmatch(self.s[j + 1 : close] or "-"):
                j = close + 1
        fd = self.s[self.i : j]
        for op in _REDIR_OPS:
            if self.s.startswith(op, j):
                if op.startswith("&") and fd:
                    continue
                break
        else:
            return None
        if op in ("<", ">") and self.s.startswith("(", j + 1):
            return None  # <(...) and >(...) are process substitutions, read as words
        if fd and fd.startswith("{") is False and not fd.isdigit():
            return None
        self.i = j + len(op)
        self.skip_blanks()
        target = self.read_word()
        if target is None:
            self.problem(f"a redirection {op!r} without a target")
            return Redirect(op, fd, None)
        if op in ("<<", "<<-"):
            quoted = target.text != target.value or any(q in target.text for q in "'\"\\")
            self.state.heredocs.append((target.value, op == "<<-", not quoted))
        return Redirect(op, fd, target)

    # -- words -----------------------------------------------------------------------------------

    def read_word(self, assignment_ok: bool = False) -> Word | None:
        start = self.i
        out: list[str] = []
        expands = glob = tilde = brace = False
        if self.peek() == "~":
            tilde = True
        while self.i < self.n:
            c = self.s[self.i]
            if c in _METACHARS:
                if c in "<>" and self.peek(1) == "(":
                    self.state.substitutions = True
                    expands = True
                    self.i += 2
                    self.nested(")", "process")
                    out.append("\x00")
                    continue
                if c == "(" and assignment_ok and _ASSIGN.fullmatch("".join(out)):
                    # a=(one two): an array assignment; its elements are words.
                    self.i += 1
                    self.array_elements()
                    out.append("(...)")
                    expands = True
                    continue
                break
            if c == "\\":
                if self.peek(1) == "\n":
                    self.i += 2
                    continue
                if self.i + 1 < self.n:
                    out.append(self.s[self.i + 1])
                    self.i += 2
                    continue
                self.i += 1
                continue
            if c == "'":
                end = self.s.find("'", self.i + 1)
                if end == -1:
                    raise _Incomplete("a single quote is not closed")
                out.append(self.s[self.i + 1 : end])
                self.i = end + 1
                continue
            if c == '"':
                self.i += 1
                inner, dynamic = self.double_quoted()
                out.append(inner)
                expands = expands or dynamic
                continue
            if c == "$":
                piece, dynamic = self.dollar()
                out.append(piece)
                expands = expands or dynamic
                continue
            if c == "`":
                self.backtick()
                out.append("\x00")
                expands = True
                continue
            if c in "*?[":
                glob = True
            elif c == "{" and re.match(r"\{[^{}\s]*(,|\.\.)[^{}\s]*\}", self.s[self.i :]):
                brace = True
            out.append(c)
            self.i += 1
        if self.i == start:
            return None
        return Word(self.s[start : self.i], "".join(out), expands, glob, tilde, brace)

    def array_elements(self) -> None:
        while True:
            self.skip_blanks()
            c = self.peek()
            if not c:
                raise _Incomplete("a ')' is missing")
            if c == ")":
                self.i += 1
                return
            if c == "\n":
                self.newline()
                continue
            if self.read_word() is None:
                self.problem("unexpected text in an array")
                self.i += 1

    def double_quoted(self) -> tuple[str, bool]:
        out: list[str] = []
        dynamic = False
        while self.i < self.n:
            c = self.s[self.i]
            if c == '"':
                self.i += 1
                return "".join(out), dynamic
            if c == "\\" and self.i + 1 < self.n:
                nxt = self.s[self.i + 1]
                if nxt == "\n":
                    self.i += 2
                    continue
                if nxt in '$`"\\':
                    out.append(nxt)
                    self.i += 2
                    continue
                out.append(c)
                self.i += 1
                continue
            if c == "$":
                piece, more = self.dollar(quoted=True)
                out.append(piece)
                dynamic = dynamic or more
                continue
            if c == "`":
                self.backtick()
                out.append("\x00")
                dynamic = True
                continue
            out.append(c)
            self.i += 1
        raise _Incomplete("a double quote is not closed")

    def dollar(self, quoted: bool = False) -> tuple[str, bool]:
        """At ``$``: returns (text for the word's value, whether it expands at run time)."""
        nxt = self.peek(1)
        if nxt == "'" and not quoted:
            self.i += 2
            return self.ansi_c(), False
        if nxt == '"' and not quoted:
            self.i += 2
            inner, dynamic = self.double_quoted()
            return inner, dynamic
        if self.s.startswith("$((", self.i):
            self.i += 3
            body = self.until_double_paren()
            _scan_expansions(body, self.state, self.depth + 1, "substitution")
            return "\x00", True
        if nxt == "(":
            self.state.substitutions = True
            self.i += 2
            self.nested(")", "substitution")
            return "\x00", True
        if nxt == "{":
            self.i += 2
            body = self.until_brace()  # parses the substitutions inside as it goes
            return "${" + body + "}", True
        if nxt == "[":  # $[...] old arithmetic
            end = self.s.find("]", self.i)
            if end == -1:
                raise _Incomplete("']' is missing")
            _scan_expansions(self.s[self.i + 2 : end], self.state, self.depth + 1, "substitution")
            self.i = end + 1
            return "\x00", True
        m = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-]").match(self.s, self.i + 1)
        if m:
            self.i = m.end()
            return "$" + m.group(), True
        self.i += 1
        return "$", False

    def until_brace(self) -> str:
        start = self.i
        depth = 0
        while self.i < self.n:
            c = self.s[self.i]
            if c == "\\":
                self.i += 2
                continue
            if c == "'":
                end = self.s.find("'", self.i + 1)
                if end == -1:
                    raise _Incomplete("a single quote is not closed")
                self.i = end + 1
                continue
            if c == '"':
                self.i += 1
                self.double_quoted()
                continue
            if c == "$" and self.peek(1) in "({":
                self.dollar(quoted=True)
                continue
            if c == "`":
                self.backtick()
                continue
            if c == "{":
                depth += 1
            elif c == "}":
                if depth == 0:
                    body = self.s[start : self.i]
                    self.i += 1
                    return body
                depth -= 1
            self.i += 1
        raise _Incomplete("a '}' is missing")

    def backtick(self) -> None:
        self.state.substitutions = True
        j = self.i + 1
        body: list[str] = []
        while j < self.n:
            c = self.s[j]
            if c == "\\" and j + 1 < self.n and self.s[j + 1] in "`$\\":
                body.append(self.s[j + 1])
                j += 2
                continue
            if c == "`":
                self.i = j + 1
                _parse_into("".join(body), self.state, self.depth + 1, "substitution")
                return
            body.append(c)
            j += 1
        raise _Incomplete("a backtick is not closed")

    def ansi_c(self) -> str:
        out: list[str] = []
        while self.i < self.n:
            c = self.s[self.i]
            if c == "'":
                self.i += 1
                return "".join(out)
            if c == "\\" and self.i + 1 < self.n:
                self.i += 1
                e = self.s[self.i]
                simple = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "e": "\x1b"}
                simple.update({"E": "\x1b", "f": "\f", "v": "\v", "\\": "\\", "'": "'"})
                simple['"'] = '"'
                simple["?"] = "?"
                if e in simple:
                    out.append(simple[e])
                    self.i += 1
                    continue
                m = re.compile(r"x([0-9A-Fa-f]{1,2})|u([0-9A-Fa-f]{1,4})|U([0-9A-Fa-f]{1,8})")
                hit = m.match(self.s, self.i)
                if hit:
                    digits = hit.group(1) or hit.group(2) or hit.group(3)
                    code = int(digits, 16)
                    out.append(chr(code) if code < 0x110000 else "\ufffd")
                    self.i = hit.end()
                    continue
                octal = re.compile(r"[0-7]{1,3}").match(self.s, self.i)
                if octal:
                    out.append(chr(int(octal.group(), 8) & 0xFF))
                    self.i = octal.end()
                    continue
                if e == "c" and self.i + 1 < self.n:
                    out.append(chr(ord(self.s[self.i + 1]) & 0x1F))
                    self.i += 2
                    continue
                out.append("\\" + e)
                self.i += 1
                continue
            out.append(c)
            self.i += 1
        raise _Incomplete("a $'...' quote is not closed")


def _parse_into(text: str, state: _State, depth: int, context: str) -> None:
    parser = _Parser(text, state, depth)
    try:
        parser.parse_list(context)
    except _Incomplete as exc:
        parser.problem(str(exc))


def _scan_expansions(text: str, state: _State, depth: int, context: str) -> None:
    """Find the command substitutions inside text that is not itself commands (a here-document
    body, an arithmetic expression, ``${...}``) and parse them."""
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if (
            c == "`"
            or (c == "$" and text.startswith(("$(", "${"), i))
            or (c in "<>" and text.startswith("(", i + 1))
        ):
            parser = _Parser(text, state, depth)
            parser.i = i
            try:
                if c == "`":
                    parser.backtick()
                elif c == "$":
                    parser.dollar(quoted=True)
                else:
                    parser.read_word()
            except _Incomplete as exc:
                parser.problem(str(exc))
                return
            i = max(parser.i, i + 1)
            continue
        i += 1


def parse(command: str) -> Script:
    """Parse a command line; see the module docstring."""
    state = _State()
    if len(command) > _MAX_LENGTH:
        return Script((), ("the command is too long to analyse",), False)
    if "\x00" in command:
        return Script((), ("the command contains a NUL byte",), False)
    _parse_into(command, state, 0, "top")
    if state.heredocs:
        state.problems.append("a here-document has no body")
    return Script(tuple(state.commands), tuple(state.problems), state.substitutions)


def embedded_substitutions(text: str) -> Script:
    """The commands the substitutions written inside ``text`` would run if bash evaluated it
    later: quoted text that reaches an arithmetic context or an array subscript
    (``x='a[$(cmd)]'; echo $((x))``, ``declare -i``, ``test -v``, ``read``, ``let``) runs its
    ``$(...)`` and backticks even though it was quoted where it was written."""
    state = _State()
    if len(text) <= _MAX_LENGTH:
        _scan_expansions(text, state, 1, "substitution")
    return Script(tuple(state.commands), tuple(state.problems), bool(state.commands))
