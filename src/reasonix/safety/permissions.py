"""Permission rules, approval modes and the approval callback.

:class:`PermissionEngine` implements :class:`reasonix.tools.registry.PermissionPolicy`. For each
call it decides, in this order:

1. a matching **deny** rule refuses the call (in every mode);
2. ``plan`` mode refuses every tool that is not read-only; ``yolo`` allows the rest;
3. a write to what makes code run later outside the sandbox (our own configuration, other
   agents', shell start-up files, git's machinery and what the repository's configuration names:
   :func:`reasonix.safety.protected.protection`) asks, as does any other check in
   ``ask_checks``; so does a matching **ask** rule;
4. a matching **allow** rule, or a rule the user allowed for the session, allows;
5. otherwise the mode decides from the tool's annotations:

   ============  =============  ==================================  ==========
   mode          read-only      edit category (not destructive)     the rest
   ============  =============  ==================================  ==========
   ``ask``       allow          ask                                 ask
   ``auto``      allow          reviewer, then ask                  reviewer, then ask
   ``auto-edit`` allow          allow                               ask
   ``plan``      allow          deny                                deny
   ``yolo``      allow          allow                               allow
   ============  =============  ==================================  ==========

   A bash command proved to only read inside the workspace (:mod:`reasonix.safety.shell`:
   ``ls -la``, ``git status``, ``cat README.md | head -50``) counts as read-only in ``ask``
   and ``auto-edit`` mode (``via="read-only"``); deny rules, ask rules and hooks still apply.

The decision is a value: :func:`decide` (pure) gives a :class:`Verdict` (the outcome, the rule
that decided, the reason, the rules proposed for the session). Asking is a separate step with
one path, shared by the irreversible case (:meth:`PermissionEngine._ask`); recording is a third
(``on_decision``). Without an :class:`Approver` (a headless run) "ask" becomes a denial that says
which rule would allow the call.

Rules are written ``name`` or ``name(pattern)``; ``name`` is a tool's ``category`` (``read``,
``edit``, ``bash``, ``web``), its own name or an alias. The pattern is matched against the
call's subject (:func:`call_subject`): for ``bash`` the command, ``*`` matching anything (the
README's rules section says what an allow rule covers and what deny and ask rules see through:
:func:`~reasonix.safety.shell.rules.allow_obstacle`,
:func:`~reasonix.safety.shell.rules.rule_matches`); for ``read``/``edit`` the path relative to
the workspace, gitignore-style (a ``read`` deny rule also refuses a ``grep`` over a folder that
may hold files it covers; ``bash``'s ``cat`` is not bound by path rules); for ``web_fetch`` the
URL, for ``web_search`` the query; for any other tool its arguments as canonical JSON.

It runs past 500 lines because the decision order above is one function of many small checks
that must all see the same normalised subject; what is a language of its own lives apart (the
shell model in :mod:`reasonix.safety.shell`, path patterns in :mod:`~reasonix.safety.patterns`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from reasonix.errors import ConfigError
from reasonix.messages import canonical_json
from reasonix.safety.patterns import (
    cached_path_pattern,
    command_pattern,
    escape_command_pattern,
    escape_path_pattern,
    normalize_command,
)
from reasonix.safety.shell.effects import effects
from reasonix.safety.shell.readers import read_only_obstacle
from reasonix.safety.shell.rules import allow_obstacle, rule_matches
from reasonix.terminal_text import printable
from reasonix.tools.registry import Permission, PermissionDecision, Tool, ToolContext

if TYPE_CHECKING:
    from reasonix.safety.reviewing import Decision, Reviewer


class Mode(enum.StrEnum):
    """Approval modes; see the module docstring for what each allows."""

    ASK = "ask"
    AUTO_EDIT = "auto-edit"
    #: ``ask``, but a cheap reviewer model answers first what is not on the hard floor
    #: (:mod:`reasonix.safety.reviewing`)
    AUTO = "auto"
    PLAN = "plan"
    YOLO = "yolo"


#: the modes that run every call unasked: a key press (Shift+Tab) does not cycle into one unless
#: the session started in it; the user names it (``/mode yolo``, ``--mode``)
UNASKED_MODES = frozenset({Mode.YOLO})


def next_mode(current: Mode | str, start: Mode | str) -> Mode:
    """The mode after ``current`` in :class:`Mode`'s order, round the list (Shift+Tab), leaving
    out :data:`UNASKED_MODES` other than ``start`` (the mode the session started in)."""
    here, began = _parse_mode(current), _parse_mode(start)
    cycle = [m for m in Mode if m not in UNASKED_MODES or m is began or m is here]
    return cycle[(cycle.index(here) + 1) % len(cycle)]


#: Each mode's name and one line for a person, in the order pickers and the mode cycle offer
#: them: the one list the CLI, ACP's mode list and the dashboard's picker read.
MODE_HELP: dict[Mode, tuple[str, str]] = {
    Mode.ASK: ("Ask", "Ask before edits and commands"),
    Mode.AUTO_EDIT: ("Auto-edit", "Edit files without asking; ask before commands"),
    Mode.AUTO: (
        "Auto",
        "A reviewer model answers the approvals; irreversible commands, config writes and "
        "ask rules still ask you",
    ),
    Mode.PLAN: ("Plan", "Read-only: investigate and plan, change nothing"),
    Mode.YOLO: ("Yolo", "Run everything without asking (deny rules still apply)"),
}


def mode_names(sep: str = "|") -> str:
    """``ask|auto-edit|auto|plan|yolo``: the modes for usage and error text."""
    return sep.join(m.value for m in Mode)


@dataclass(frozen=True)
class Rule:
    """One permission rule such as ``bash(git status*)`` with its action."""

    text: str
    action: Decision
    name: str = field(init=False)
    pattern: str | None = field(init=False)

    def __post_init__(self) -> None:
        text = self.text.strip()
        name, sep, rest = text.partition("(")
        if sep and not rest.endswith(")"):
            raise ConfigError(
                f"Permission rule {self.text!r} is missing its closing ')'. "
                "Write it as name or name(pattern), e.g. bash(git status*)."
            )
        name = name.strip()
        if not name:
            raise ConfigError(f"Permission rule {self.text!r} has no tool or category name.")
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "pattern", rest[:-1].strip() if sep else None)

    def applies_to(self, tool: Tool) -> bool:
        # Claude Code's names (Read, Bash, Edit) name the tools that declare them as aliases.
        return self.name in (tool.name, tool.category, *tool.aliases)

    def matches(self, tool: Tool, subject: Subject) -> bool:
        """Whether this rule covers the call (``subject`` is what the call acts on)."""
        if not self.applies_to(tool):
            return False
        if self.pattern is None or self.pattern in ("*", "**"):
            return True
        if subject.kind == "command":
            regex = command_pattern(self.pattern)
            return any(regex.match(part) for part in (*subject.values, *subject.plain))
        if subject.kind == "path":
            pattern = cached_path_pattern(self.pattern)
            return any(pattern.match(v) for v in subject.values)
        return command_pattern(self.pattern).match(subject.values[0]) is not None


@dataclass(frozen=True, slots=True)
class Subject:
    """What a call acts on, in the form rules match: command parts, paths, or JSON arguments.

    ``opaque`` marks a command whose parts cannot all be seen (command substitution, or a line
    the lexer cannot analyse); ``redirects`` one that writes a file through a redirection;
    ``folder`` a path subject that is a folder."""

    kind: Literal["command", "path", "args"]
    values: tuple[str, ...]
    opaque: bool = False
    whole: str = ""
    redirects: bool = False
    folder: bool = False
    #: for a command: every form it may run (for deny and ask rules), why no allow rule may
    #: cover it (None when one may), and its parts with quotes removed
    forms: frozenset[tuple[str | None, ...]] = frozenset()
    obstacle: str | None = None
    plain: tuple[str, ...] = ()
    #: for a path: why writing it could make code run later outside the sandbox
    #: (:func:`reasonix.safety.protected.protection`), or None
    protected: str | None = None
    #: for a command: proved to only read inside the workspace
    #: (:func:`reasonix.safety.shell.readers.read_only_obstacle`)
    read_only: bool = False

    def describe(self) -> str:
        """The subject for a person to read; control and bidi characters are shown escaped so
        a command cannot hide a part of itself from the one approving it."""
        return printable(" ; ".join(self.values))


def call_subject(tool: Tool, arguments: Mapping[str, Any], workspace: Path) -> Subject:
    """The subject permission rules match for this call: the first argument the tool declares
    as a subject (:attr:`Tool.subjects`) that the call gives. ``command`` is a shell line,
    ``path`` a file or folder (``.`` when a reader leaves it out), any other (a URL, a query)
    is matched as written; a tool that declares none is judged by all its arguments."""
    for name in tool.subjects:
        value = arguments.get(name, "." if name == "path" else None)
        if not isinstance(value, str):
            continue
        if name == "command":
            return _command_subject(value, workspace)
        if name == "path":
            rel = _rule_path(value, workspace)
            folder = os.path.isdir(os.path.join(workspace, rel))
            guarded = _protected(rel, workspace) if tool.writes or not tool.read_only else None
            return Subject("path", (rel,), folder=folder, protected=guarded)
        return Subject("args", (value,))
    return Subject("args", (canonical_json(dict(arguments)),))


def _command_subject(command: str, workspace: Path) -> Subject:
    line = effects(command)
    script = line.script
    whole = normalize_command(command)
    plain = tuple(
        " ".join(c.argv) for c in script.commands if c.words and all(w.literal for w in c.words)
    )
    return Subject(
        "command",
        tuple(line.parts) or (whole,),
        line.opaque,
        whole,
        redirects=line.redirects,
        forms=line.runs,
        obstacle=allow_obstacle(script, workspace),
        plain=plain,
        read_only=read_only_obstacle(script, workspace) is None,
    )


def _protected(rel: str, workspace: Path) -> str | None:
    """Why writing ``rel`` could make code run later outside the sandbox, or None. A path
    outside the workspace (in a folder added with ``--add-dir``) is judged against each folder
    it lies in: its ``.mcp.json`` or ``.claude/settings.json`` runs code there as ours would."""
    from reasonix.safety.protected import protection

    base = Path(os.path.realpath(workspace))
    if not rel.startswith("/"):
        return protection(base / rel, base)
    path = Path(rel)
    for folder in path.parents:
        if folder == folder.parent:
            break  # not the file system's root: every path is below it
        why = protection(path, folder)
        if why is not None:
            return f"{why} (in {folder})"
    return None


def _rule_path(raw: str, workspace: Path) -> str:
    """``raw`` resolved like the sandbox does, relative to the workspace when inside it."""
    try:
        real = Path(os.path.realpath(os.path.join(workspace, os.path.expanduser(raw))))
        base = Path(os.path.realpath(workspace))
    except (OSError, ValueError):
        return raw
    if real == base:
        return "."
    if real.is_relative_to(base):
        return real.relative_to(base).as_posix()
    return real.as_posix()


# ---------------------------------------------------------------------------------------------
# Approvals


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """What the approver is asked about. ``session_rules`` are the rules "allow for the
    session" adds unless the answer names others (one per part of a compound command)."""

    tool: str
    category: str
    arguments: Mapping[str, Any]
    subject: str
    reason: str
    session_rules: tuple[str, ...]
    mode: Mode
    #: why no snapshot could undo this call (empty for ordinary calls); always asked
    irreversible: str = ""
    #: what the call will do, from the tool's preview (an edit's diff, a new file's head)
    preview: str = ""
    #: what the tool declares it is (:attr:`Tool.kind`), for a frontend to show it by
    tool_kind: str = "other"


@dataclass(frozen=True, slots=True)
class ApprovalAnswer:
    """The user's answer: ``once``, ``session`` (remember ``rules``, or the request's
    ``session_rules``, until the engine is discarded) or ``deny`` (``reason`` goes back to the
    model)."""

    kind: Literal["once", "session", "deny"]
    reason: str = ""
    rules: tuple[str, ...] | None = None

    @classmethod
    def allow_once(cls) -> ApprovalAnswer:
        return cls("once")

    @classmethod
    def allow_session(cls, *rules: str) -> ApprovalAnswer:
        return cls("session", rules=rules or None)

    @classmethod
    def deny(cls, reason: str = "") -> ApprovalAnswer:
        return cls("deny", reason)


class Approver(Protocol):
    """Asks the user about a call; frontends implement this."""

    async def approve(self, request: ApprovalRequest) -> ApprovalAnswer: ...


@dataclass(frozen=True, slots=True)
class PermissionRecord:
    """One decision, for the host to show or log. ``via``: ``rule``, ``mode``, ``session``,
    ``approver`` or ``headless``."""

    tool: str
    subject: str
    allowed: bool
    via: str
    mode: Mode
    rule: str | None = None
    reason: str = ""


# ---------------------------------------------------------------------------------------------
# Engine


class PermissionEngine:
    """Rules + mode + approver; a :class:`~reasonix.tools.registry.PermissionPolicy`.

    ``mode`` can be changed at any time (``engine.mode = "plan"``). Session approvals are kept
    on the engine, never written to configuration.
    """

    def __init__(
        self,
        *,
        mode: Mode | str = Mode.ASK,
        allow: Iterable[str] = (),
        ask: Iterable[str] = (),
        deny: Iterable[str] = (),
        approver: Approver | None = None,
        on_decision: Callable[[PermissionRecord], None] | None = None,
        unattended_refusal: str | None = None,
    ) -> None:
        #: set when bash would run unconfined without the user's acknowledgement: yolo mode is
        #: then refused with this message (see :mod:`reasonix.safety.confinement`)
        self.unattended_refusal = unattended_refusal
        self._mode = self._checked_mode(mode)
        self.allow = [Rule(r, "allow") for r in allow]
        self.ask = [Rule(r, "ask") for r in ask]
        self.deny = [Rule(r, "deny") for r in deny]
        self.session_allow: list[Rule] = []
        # Exact calls approved for the session, for commands no rule can describe.
        self._session_calls: set[str] = set()
        self.approver = approver
        self.on_decision = on_decision
        #: Checks that make a call ask whatever allow rules and the mode say (in every mode but
        #: yolo); each returns the reason, or None. More can be appended.
        self.ask_checks: list[Callable[[Tool, Subject], str | None]] = [own_config_write]
        # One question at a time; a second identical call waits and reuses a session answer.
        self._approval_lock = asyncio.Lock()
        #: answers first, in ``auto`` mode, what would ask and is not on the hard floor
        self.reviewer: Reviewer | None = None

    @property
    def mode(self) -> Mode:
        return self._mode

    @mode.setter
    def mode(self, value: Mode | str) -> None:
        self._mode = self._checked_mode(value)

    @property
    def session_calls(self) -> tuple[str, ...]:
        """The exact calls (``tool:{canonical arguments}``) approved for the session, for the
        commands no rule could describe."""
        return tuple(sorted(self._session_calls))

    def _checked_mode(self, value: Mode | str) -> Mode:
        mode = _parse_mode(value)
        if mode is Mode.YOLO and self.unattended_refusal:
            raise ConfigError(self.unattended_refusal)
        return mode

    def rules(self) -> Rules:
        """The rules as they stand now, for :func:`decide`."""
        return Rules(
            tuple(self.allow),
            tuple(self.ask),
            tuple(self.deny),
            tuple(self.session_allow),
            tuple(self.ask_checks),
        )

    async def check(
        self,
        tool: Tool,
        arguments: Mapping[str, Any],
        ctx: ToolContext,
        *,
        hook_decision: str | None = None,
    ) -> PermissionDecision:
        """Decide one call (:func:`decide`: see the module docstring for the order), ask when
        the verdict is to ask (:meth:`_ask`), and record the outcome. ``hook_decision`` is a
        ``PreToolUse`` hook's answer: ``ask`` asks even where rules and mode allow, ``allow``
        allows what would ask (deny rules and plan mode still refuse)."""
        subject = call_subject(tool, arguments, ctx.workspace)
        danger = _irreversible(tool, arguments, ctx.workspace)
        verdict = decide(tool, subject, self._mode, self.rules(), hook_decision, danger)
        if verdict.outcome != "ask":
            return self._record(tool, subject, verdict)
        return self._record(tool, subject, await self._ask(tool, subject, arguments, ctx, verdict))

    async def _ask(
        self,
        tool: Tool,
        subject: Subject,
        arguments: Mapping[str, Any],
        ctx: ToolContext,
        verdict: Verdict,
    ) -> Verdict:
        """The one path that asks: the exact calls approved earlier, the headless refusal, the
        session's rules approved while this call waited, the approver. A command no snapshot
        can undo (``verdict.irreversible``) asks every time and is never remembered."""
        irreversible = verdict.irreversible is not None
        call_key = f"{tool.name}:{canonical_json(dict(arguments))}"
        if not irreversible and call_key in self._session_calls:
            return Verdict("allow", "session", reason="approved earlier")
        if self._mode is Mode.AUTO and self.reviewer is not None:
            reviewed = await self._review(tool, subject, arguments, ctx, verdict)
            if reviewed.outcome != "ask":
                return reviewed
            verdict = reviewed
        if self.approver is None:
            return Verdict("deny", "headless", reason=self._headless_reason(tool, subject, verdict))
        async with self._approval_lock:
            if not irreversible:
                if call_key in self._session_calls:
                    return Verdict("allow", "session", reason="approved earlier")
                # A rule allowed for the session while this call waited covers it as it would
                # have before the question, never past what must ask (a protected file, an ask
                # rule).
                again = _match_allow(
                    session_rules_covering(self.session_allow, tool), tool, subject
                )
                if again is not None and self.rules().must_ask(tool, subject) is None:
                    return Verdict("allow", "session", again.text)
            request = ApprovalRequest(
                tool=tool.name,
                category=tool.category,
                arguments=dict(arguments),
                subject=_shown_subject(subject, arguments),
                preview="" if irreversible else ctx.preview,
                reason=verdict.reason,
                session_rules=() if irreversible else verdict.session_rules,
                mode=self._mode,
                irreversible=verdict.irreversible or "",
                tool_kind=tool.kind,
            )
            answer = await self.approver.approve(request)
        if answer.kind == "deny":
            why = "the user declined" + (f": {answer.reason}" if answer.reason else "")
            return Verdict("deny", "approver", reason=why)
        if irreversible:
            # Never remembered for the session: the next one asks again.
            return Verdict("allow", "approver", reason="allowed once (irreversible)")
        if answer.kind == "session":
            rules = [Rule(text, "allow") for text in (answer.rules or request.session_rules)]
            self.session_allow.extend(rules)
            self._session_calls.add(call_key)
            shown = ", ".join(r.text for r in rules)
            return Verdict("allow", "approver", shown, "allowed for the session")
        return Verdict("allow", "approver", reason="allowed once")

    async def _review(
        self,
        tool: Tool,
        subject: Subject,
        arguments: Mapping[str, Any],
        ctx: ToolContext,
        verdict: Verdict,
    ) -> Verdict:
        """Auto mode: the reviewer's verdict on a question off the hard floor
        (:mod:`reasonix.safety.reviewing`); ``ask`` comes back with its reason added."""
        from reasonix.safety.reviewing import ReviewRequest, call_hash

        reviewer = self.reviewer
        assert reviewer is not None
        # The hard floor (the verdict's, or bash outside the sandbox unacknowledged) asks a person.
        unconfined = tool.category == "bash" and self.unattended_refusal
        if verdict.floor is not None or unconfined or not reviewer.covers(tool):
            return verdict
        rules = self.rules()
        in_force = (*rules.deny, *rules.ask, *rules.allow, *rules.session_allow)
        request = ReviewRequest(
            call_hash(tool.name, arguments),
            tool.name,
            tool.category,
            dict(arguments),
            subject=_shown_subject(subject, arguments),
            reason=verdict.reason,
            preview=ctx.preview,
            rules=tuple(f"{rule.action} {rule.text}" for rule in in_force),
            preview_cut=ctx.preview_cut,
        )
        answer = await reviewer.review(request)
        if answer.decision == "allow":
            return Verdict("allow", "reviewer", reason=f"allowed by the reviewer: {answer.reason}")
        if answer.decision == "deny":
            return Verdict("deny", "reviewer", reason=f"refused by the reviewer: {answer.reason}")
        why = f"{verdict.reason}; the reviewer left it to you: {answer.reason}"
        return dataclasses.replace(verdict, reason=why)

    def _headless_reason(self, tool: Tool, subject: Subject, verdict: Verdict) -> str:
        suggested = ", ".join(repr(r) for r in verdict.session_rules)
        if verdict.irreversible is not None:
            return (
                f"{verdict.reason}. To permit it, add {suggested} to "
                "[permissions] allow in your own config."
            )
        no_rule = subject.kind == "command" and (
            subject.opaque or subject.redirects or subject.obstacle is not None
        )
        if no_rule or self.rules().must_ask(tool, subject) is not None:
            fix = "approve it in an interactive session, use --yes, or run it in yolo mode"
        else:
            fix = f"add {suggested} to [permissions] allow"
        return (
            f"{verdict.reason}, and no one can approve it in this non-interactive run. "
            f"To permit it, {fix}."
        )

    def _record(self, tool: Tool, subject: Subject, verdict: Verdict) -> PermissionDecision:
        allowed = verdict.outcome == "allow"
        if self.on_decision is not None:
            shown = subject.describe()
            rule, why = verdict.rule, verdict.reason
            self.on_decision(
                PermissionRecord(tool.name, shown, allowed, verdict.via, self._mode, rule, why)
            )
        permission = Permission.ALLOW if allowed else Permission.DENY
        return PermissionDecision(permission, verdict.reason)


# ---------------------------------------------------------------------------------------------
# The decision


@dataclass(frozen=True, slots=True)
class Verdict:
    """What :func:`decide` found: ``allow``, ``ask`` or ``deny``; ``via`` what decided
    (``rule``, ``mode``, ``session``, ``hook``; after asking ``approver`` or ``headless``), the
    ``rule`` that did, the ``reason``, the rules proposed for "for this session", and, for a
    command no snapshot can undo, why (``irreversible``)."""

    outcome: Decision
    via: str
    rule: str | None = None
    reason: str = ""
    session_rules: tuple[str, ...] = ()
    irreversible: str | None = None
    #: for an ``ask``: why only a person may answer it (a reviewer never sees it), or None
    floor: str | None = None


@dataclass(frozen=True, slots=True)
class Rules:
    """The rules a decision reads: the configured allow, ask and deny rules, the rules the user
    allowed for the session, and the checks that make a call ask."""

    allow: tuple[Rule, ...] = ()
    ask: tuple[Rule, ...] = ()
    deny: tuple[Rule, ...] = ()
    session_allow: tuple[Rule, ...] = ()
    ask_checks: tuple[Callable[[Tool, Subject], str | None], ...] = ()

    def must_ask(self, tool: Tool, subject: Subject) -> str | None:
        """Why the call asks whatever allow rules and the mode say (in every mode but yolo):
        a check of ``ask_checks`` (a write to what runs code later), or an ask rule the user
        wrote; None when neither applies. Only a person may answer it (:func:`_floor`)."""
        for check in self.ask_checks:
            reason = check(tool, subject)
            if reason is not None:
                return reason
        asked = _match_any_form(self.ask, tool, subject)
        return None if asked is None else f"the ask rule {asked.text!r}"

    def ask_reason(self, tool: Tool, subject: Subject, mode: Mode) -> str:
        must = self.must_ask(tool, subject)
        if must is not None:
            return f"{tool.name} needs approval ({must})"
        if subject.opaque:
            return f"{tool.name} needs approval (the command hides parts in $(...) or backticks)"
        if subject.redirects:
            return f"{tool.name} needs approval (the command writes a file through a redirection)"
        # an allow rule names this command: say why it did not apply
        if subject.obstacle is not None and any(
            r.matches(tool, subject) for r in (*self.allow, *self.session_allow)
        ):
            return f"{tool.name} needs approval ({subject.obstacle}, which no allow rule covers)"
        return f"{tool.name} needs approval in {mode.value} mode"


def session_rules_covering(rules: Sequence[Rule], tool: Tool) -> Sequence[Rule]:
    """The rules allowed for the session that may cover ``tool``: for a tool that destroys
    (``delete_file``) only those naming it, not its category. "For this session" on an edit
    proposes ``edit(**)``, every file edit, which must not make every file deletable unasked
    (auto-edit mode never deletes unasked either)."""
    if not tool.destructive:
        return rules
    return [r for r in rules if r.name in (tool.name, *tool.aliases)]


def decide(
    tool: Tool,
    subject: Subject,
    mode: Mode,
    rules: Rules,
    hook: str | None = None,
    irreversible: str | None = None,
) -> Verdict:
    """The permission decision for one call, as a value, in the order the module docstring
    gives; pure (asking and recording are the engine's). ``hook`` is a ``PreToolUse`` hook's
    answer (``ask``, ``allow`` or None); ``irreversible`` why the command destroys what no
    snapshot can bring back, or None."""
    if irreversible and mode is not Mode.PLAN and _match_deny(rules.deny, tool, subject) is None:
        return _decide_irreversible(tool, subject, mode, rules, irreversible)
    verdict = _decide_by_rules(tool, subject, mode, rules)
    if verdict is not None and not (hook == "ask" and verdict.outcome == "allow"):
        return verdict
    if verdict is None and hook == "allow":
        return Verdict("allow", "hook", reason="allowed by a PreToolUse hook")
    reason = rules.ask_reason(tool, subject, mode)
    proposed = session_rules_for(tool, subject)
    return Verdict(
        "ask",
        "mode",
        reason=reason,
        session_rules=proposed,
        floor=_floor(rules, tool, subject, hook),
    )


def _floor(rules: Rules, tool: Tool, subject: Subject, hook: str | None) -> str | None:
    """Why an ask may not go to a reviewer: a check that always asks (a write to what runs
    code later), an ask rule the user wrote, a hook that asked."""
    must = rules.must_ask(tool, subject)
    if must is None and hook == "ask":
        return "a PreToolUse hook asked"
    return must


def _decide_irreversible(
    tool: Tool, subject: Subject, mode: Mode, rules: Rules, danger: str
) -> Verdict:
    """Ask before a command no snapshot can undo, in every mode, unless an explicit allow
    rule in the configuration names it (a bare ``bash`` or ``bash(*)`` does not)."""
    explicit = [r for r in rules.allow if r.pattern and r.pattern.strip("* ")]
    allowed = _match_allow(explicit, tool, subject)
    if allowed is not None:
        return Verdict("allow", "rule", allowed.text)
    reason = f"{tool.name} needs approval every time, as no snapshot can undo it: {danger}"
    proposed = session_rules_for(tool, subject)
    return Verdict(
        "ask",
        "irreversible",
        reason=reason,
        session_rules=proposed,
        irreversible=danger,
        floor=f"no snapshot can undo it: {danger}",
    )


def _decide_by_rules(tool: Tool, subject: Subject, mode: Mode, rules: Rules) -> Verdict | None:
    """The decision rules and mode make on their own; None means ask."""
    denied = _match_deny(rules.deny, tool, subject)
    if denied is not None:
        why = f"blocked by the deny rule {denied.text!r}"
        return Verdict("deny", "rule", denied.text, why)
    if mode is Mode.PLAN and not tool.read_only:
        why = "plan mode is read-only; present the plan instead of changing files"
        return Verdict("deny", "mode", reason=why)
    if mode is Mode.YOLO:
        return Verdict("allow", "mode")
    if rules.must_ask(tool, subject) is not None:
        return None
    allowed = _match_allow(rules.allow, tool, subject)
    if allowed is not None:
        return Verdict("allow", "rule", allowed.text)
    session = _match_allow(session_rules_covering(rules.session_allow, tool), tool, subject)
    if session is not None:
        return Verdict("allow", "session", session.text)
    if tool.read_only:
        return Verdict("allow", "mode")
    # Our own shell only: another tool that takes a command (an MCP server's) runs it its way.
    if subject.read_only and tool.category == "bash" and mode in (Mode.ASK, Mode.AUTO_EDIT):
        return Verdict("allow", "read-only", reason="the command only reads")
    if mode is Mode.AUTO_EDIT and tool.category == "edit" and not tool.destructive:
        return Verdict("allow", "mode")
    return None


def _match(rules: Iterable[Rule], tool: Tool, subject: Subject) -> Rule | None:
    return next((r for r in rules if r.matches(tool, subject)), None)


def _match_any_form(rules: Iterable[Rule], tool: Tool, subject: Subject) -> Rule | None:
    """For deny and ask rules: a command matches if any form it may run does
    (:func:`~reasonix.safety.shell.rules.rule_matches`); the whole line is tried too, so a
    pattern written with operators in it (``bash(curl * | sh)``) works."""
    if subject.kind != "command":
        return _match(rules, tool, subject)
    for rule in rules:
        if not rule.applies_to(tool):
            continue
        if rule.pattern is None or rule.pattern in ("*", "**"):
            return rule
        if command_pattern(rule.pattern).match(subject.whole):
            return rule
        if rule_matches(rule.pattern, subject.forms):
            return rule
    return None


def _match_deny(deny: tuple[Rule, ...] | list[Rule], tool: Tool, subject: Subject) -> Rule | None:
    if subject.kind == "command":
        return _match_any_form(deny, tool, subject)
    hit = _match(deny, tool, subject)
    if hit is None and subject.folder and tool.name in FOLDER_READERS:
        # A search over a folder reads the files below it: a deny rule for any of them
        # refuses the search.
        below = (
            r for r in deny if r.applies_to(tool) and _reaches_below(r.pattern, subject.values[0])
        )
        hit = next(below, None)
    return hit


def _match_allow(rules: Iterable[Rule], tool: Tool, subject: Subject) -> Rule | None:
    """An allow rule must cover every part of a command, and only a command with no
    obstacle (:func:`~reasonix.safety.shell.rules.allow_obstacle`: a substitution, a
    redirection into a file, a side effect, a read outside the workspace, ...)."""
    rules = tuple(rules)
    if subject.kind != "command":
        return _match(rules, tool, subject)
    if subject.opaque or subject.redirects or subject.obstacle is not None:
        return None
    first: Rule | None = None
    for k, part in enumerate(subject.values):
        plain = subject.plain[k : k + 1] if len(subject.plain) == len(subject.values) else ()
        one = Subject("command", (part,), plain=plain)
        hit = _match(rules, tool, one)
        if hit is None:
            return None
        first = first or hit
    return first


def _shown_subject(subject: Subject, arguments: Mapping[str, Any]) -> str:
    """What an approval shows: a command exactly as it will run (its parts joined would show a
    pipe or an && as something else), other subjects as the rules see them."""
    if subject.kind == "command" and isinstance(arguments.get("command"), str):
        return printable(arguments["command"], keep_layout=True)
    return subject.describe()


def session_rules_for(tool: Tool, subject: Subject) -> tuple[str, ...]:
    """The rules "allow for the session" adds by default: each exact command part, the file's
    path, or the tool's name. They match exactly what was approved: a ``*`` in a command or a
    glob character in a path is escaped, and a top-level file name is anchored (``/x.txt``), so
    approving ``rm *.tmp`` does not approve ``rm -rf ~ x.tmp``."""
    if subject.kind == "command":
        return tuple(f"{tool.category}({escape_command_pattern(part)})" for part in subject.values)
    if subject.kind == "path":
        return (f"{tool.category}({escape_path_pattern(subject.values[0])})",)
    if tool.category == "web":
        # The site, not every URL: approving one page of a site approves its other pages.
        scheme, _, rest = subject.values[0].partition("://")
        host = rest.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
        if scheme and host:
            return (f"{tool.name}({escape_command_pattern(f'{scheme}://{host}/')}*)",)
    return (tool.name,)


def own_config_write(tool: Tool, subject: Subject) -> str | None:
    """A file tool writing what makes code run later outside the sandbox
    (:func:`reasonix.safety.protected.protection`) always asks: the next run, the user's next
    ``git commit`` or another program obeys it. (No allow rule covers a bash command naming
    one: :func:`~reasonix.safety.shell.rules.allow_obstacle`.)"""
    if subject.kind != "path" or tool.read_only or tool.category == "read":
        return None
    if subject.protected is None:
        return None
    return f"it writes {subject.protected}"


#: Tools that read the contents of every file below a folder ``path``.
FOLDER_READERS = frozenset({"grep"})


def _reaches_below(pattern: str | None, folder: str) -> bool:
    """Whether a path pattern may match something inside ``folder`` (a conservative guess)."""
    if pattern is None or pattern in ("*", "**"):
        return True
    body = pattern.rstrip("/")
    if "/" not in body:
        return True  # unanchored: a name at any depth
    literal = re.split(r"[*?\[\\]", body.lstrip("/"), maxsplit=1)[0]
    base = literal.rsplit("/", 1)[0] if "/" in literal else ""
    if folder == "." or not base:
        return True
    return base == folder or base.startswith(folder + "/") or folder.startswith(base + "/")


def _irreversible(tool: Tool, arguments: Mapping[str, Any], workspace: Path) -> str | None:
    command = arguments.get("command")
    if tool.category != "bash" or not isinstance(command, str):
        return None
    from reasonix.safety.shell.irreversible import irreversible_reason

    return irreversible_reason(command, workspace)


def _parse_mode(value: Mode | str) -> Mode:
    try:
        return Mode(value)
    except ValueError:
        raise ConfigError(
            f"Unknown permission mode {value!r}; use one of {mode_names(', ')}."
        ) from None
