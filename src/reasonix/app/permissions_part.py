"""The permissions part of a session (``session.permissions``): what decides tool calls now,
and where each piece came from (``/permissions``).

:meth:`SessionPermissions.entries` is the data: one :class:`PermissionEntry` per thing that
takes part in a decision — the mode, every configured allow/ask/deny rule with the file or
flag it came from (the loader records each list item's origin: ``Config.item_provenance``),
the rules and exact calls the user allowed for this session, the built-in checks that always
ask, the ``PreToolUse`` hooks (ours and Claude Code's settings), the permission settings a
project file wrote that were left out, and the ``permissions`` rules of ``.claude/settings.json``
(Claude Code's, which reasonix does not apply: a user relying on one should see that).
:meth:`SessionPermissions.lines` renders them; other views (a reviewer's verdicts, a dashboard
panel) read the same entries.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from reasonix.errors import SessionError
from reasonix.terminal_text import printable

if TYPE_CHECKING:
    from reasonix.app.session import AgentSession

__all__ = ["PermissionEntry", "SessionPermissions", "describe_source"]

#: what an entry is: the mode, a configured rule, something allowed for this session, a
#: built-in check, a hook, a project setting that was left out
EntryKind = Literal["mode", "rule", "session", "check", "hook", "ignored", "review"]

#: the source label of what the user allowed while the session ran
SESSION = "session"
#: the source label of the mode when it was changed after the session opened (/mode, Shift+Tab)
SESSION_MODE = "session:mode"
#: the source label of auto mode's reviewer verdicts
REVIEWER = "reviewer"
BUILT_IN = "built-in"


@dataclass(frozen=True, slots=True)
class PermissionEntry:
    """One thing in force. ``action``: ``allow``/``ask``/``deny`` for a rule, the mode's name
    for the mode, ``hook`` for a hook, ``ignored`` for what was left out; ``rule``: the rule
    text (the hook's matcher and command, the check's description); ``source``: the raw
    origin label (``default``, ``user:<path>``, ``project:<path>``, ``flag``, ``session``,
    ``session:mode``, ``built-in``)."""

    kind: EntryKind
    action: str
    rule: str
    source: str

    @property
    def where(self) -> str:
        """The source in words."""
        return describe_source(self.source)


def describe_source(label: str) -> str:
    """``user:/home/u/.config/reasonix/config.toml`` -> ``your config (/home/...)``."""
    kind, _, path = label.partition(":")
    if label == "default":
        return "built-in default"
    if label == "flag":
        return "command line"
    if label == SESSION:
        return "allowed for this session"
    if label == SESSION_MODE:
        return "changed in this session"
    if label == BUILT_IN:
        return "built in"
    if label == REVIEWER:
        return "auto mode's reviewer"
    if kind == "user":
        return f"your config ({path})"
    if kind == "project" and "/.claude/" in path.replace("\\", "/"):
        return f"Claude Code settings ({path})"
    if kind == "project":
        return f"project file ({path})"
    return label


def claude_rules(workspace: Path) -> list[PermissionEntry]:
    """The ``permissions`` rules of the project's ``.claude/settings.json`` and
    ``settings.local.json``: reasonix does not apply them (its rules are ``[permissions]``), so
    they are listed as left out, with the file, for a user who relies on one."""
    import json

    from reasonix.config.loader import read_config_file
    from reasonix.errors import ConfigError

    out: list[PermissionEntry] = []
    for name in ("settings.json", "settings.local.json"):
        path = workspace / ".claude" / name
        try:
            raw = None if path.is_symlink() else read_config_file(path)
            data = json.loads(raw.decode("utf-8", "replace")) if raw else {}
        except (ConfigError, ValueError):
            continue
        rules = data.get("permissions") if isinstance(data, dict) else None
        if not isinstance(rules, dict):
            continue
        for action in ("deny", "ask", "allow"):
            items = rules.get(action)
            for rule in items if isinstance(items, list) else ():
                text = f"{action} {rule} (Claude Code's rule: not applied; add it to [permissions])"
                out.append(PermissionEntry("ignored", "ignored", text, f"project:{path}"))
    return out


class SessionPermissions:
    """The rules in force and where they came from; ``session.permissions``."""

    def __init__(self, session: AgentSession) -> None:
        self._s = session

    def entries(self) -> list[PermissionEntry]:
        """Everything that decides a tool call now, in the order it is checked: the mode,
        deny, ask and allow rules, the session's approvals, the built-in checks, the
        ``PreToolUse`` hooks; then what a project file wrote that was left out."""
        s = self._s
        config = s.config
        engine = s._permissions
        out: list[PermissionEntry] = []
        mode = engine.mode.value
        mode_source = (
            config.provenance.get("permissions.mode", "default")
            if mode == config.permissions.mode
            else SESSION_MODE
        )
        out.append(PermissionEntry("mode", mode, mode, mode_source))
        for action, rules in (("deny", engine.deny), ("ask", engine.ask), ("allow", engine.allow)):
            origins = config.item_provenance.get(f"permissions.{action}", {})
            fallback = config.provenance.get(f"permissions.{action}", "default")
            for rule in rules:
                out.append(
                    PermissionEntry("rule", action, rule.text, origins.get(rule.text, fallback))
                )
        for rule in engine.session_allow:
            out.append(PermissionEntry("session", "allow", rule.text, SESSION))
        for call in engine.session_calls:
            tool, _, arguments = call.partition(":")
            shown = arguments if len(arguments) <= 60 else arguments[:57] + "..."
            out.append(
                PermissionEntry("session", "allow", f"{tool} {shown} (this exact call)", SESSION)
            )
        out.append(
            PermissionEntry(
                "check",
                "ask",
                "writes to configuration (ours, other agents'), git's machinery and shell "
                "start-up files",
                BUILT_IN,
            )
        )
        for group in s._hooks.runner.groups:
            if group.event != "PreToolUse":
                continue
            for hook in group.hooks:
                matcher = group.matcher or "*"
                out.append(
                    PermissionEntry(
                        "hook", "hook", f"PreToolUse [{matcher}] {hook.command}", group.source
                    )
                )
        for note in config.ignored:
            if "permissions." in note or "hooks" in note:
                out.append(PermissionEntry("ignored", "ignored", note, "project"))
        out += claude_rules(s.workspace)
        reviewer = s._controller.reviewer
        for record in reviewer.records if reviewer is not None else ():
            subject = " ".join(record.subject.split())
            shown = subject if len(subject) <= 60 else subject[:57] + "..."
            text = f"#{record.number} {record.tool} `{shown}`: {record.reason}"
            if record.via == "earlier":
                text += " (the same call's verdict reused)"
            if record.revoked:
                text += " (revoked)"
            out.append(PermissionEntry("review", record.decision, text, REVIEWER))
        return out

    def reviews(self) -> list[dict[str, object]]:
        """Auto mode's reviewer verdicts so far, as data (the JSON result's ``reviews``)."""
        reviewer = self._s._controller.reviewer
        return [
            {
                "number": r.number,
                "tool": r.tool,
                "subject": r.subject,
                "call": r.call_hash,
                "decision": r.decision,
                "reason": r.reason,
                "via": r.via,
                "revoked": r.revoked,
            }
            for r in (reviewer.records if reviewer is not None else ())
        ]

    def revoke(self, number: int) -> str:
        """``/permissions revoke N``: forget the reviewer's allow of verdict ``N``; the same
        call is reviewed again next time."""
        reviewer = self._s._controller.reviewer
        if reviewer is None:
            raise SessionError("this session has no reviewer (auto mode's)")
        try:
            record = reviewer.revoke(number)
        except ValueError as exc:
            raise SessionError(str(exc)) from None
        return (
            f"Revoked the reviewer's allow #{number} ({record.tool} `{record.subject}`): "
            "the same call is reviewed again."
        )

    def lines(self) -> list[str]:
        """``/permissions``: the entries as text."""
        entries = self.entries()
        mode = entries[0]
        lines = [f"Permission mode: {mode.action} ({mode.where})"]
        rules = [e for e in entries if e.kind in ("rule", "session")]
        if rules:
            width = min(max(len(printable(e.rule)) for e in rules) + 2, 48)
            lines.append("Rules (deny first, then ask, then allow; the mode decides the rest):")
            lines += [f"  {e.action:<6} {printable(e.rule):<{width}} {e.where}" for e in rules]
        else:
            lines.append("Rules: none configured; the mode decides (/mode to change it).")
        lines.append("Always ask:")
        lines += [f"  {e.rule} ({e.where})" for e in entries if e.kind == "check"]
        hooks = [e for e in entries if e.kind == "hook"]
        if hooks:
            lines.append("PreToolUse hooks (may deny or ask before the rules):")
            lines += [f"  {printable(e.rule)}  {e.where}" for e in hooks]
        ignored = [e for e in entries if e.kind == "ignored"]
        if ignored:
            lines.append(
                "Not applied (an untrusted folder, a setting a project may not make, or "
                "Claude Code's own rules):"
            )
            lines += [
                f"  {printable(e.rule)}" + (f"  {e.where}" if e.source != "project" else "")
                for e in ignored
            ]
        reviews = [e for e in entries if e.kind == "review"]
        if reviews:
            lines.append(
                "Reviewer verdicts (auto mode; each binds its exact call; "
                "/permissions revoke N forgets an allow):"
            )
            lines += [f"  {e.action:<6} {printable(e.rule)}" for e in reviews]
        return lines
