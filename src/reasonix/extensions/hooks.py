"""Hooks: the user's commands run at fixed points of a session, in Claude Code's protocol, so
scripts written for it run here unchanged.

Each hook is a shell command (``bash -c``) started in the workspace with the event as one JSON
object on stdin. Field names are Claude Code's: ``session_id``, ``transcript_path``, ``cwd``,
``hook_event_name``, ``permission_mode`` and, per event, ``tool_name`` / ``tool_input`` /
``tool_use_id`` (``PreToolUse``), plus ``tool_response`` (``PostToolUse``), ``prompt``
(``UserPromptSubmit``), ``stop_hook_active`` (``Stop``), ``source`` (``SessionStart``:
``startup``, ``resume``, ``clear``), ``reason`` (``SessionEnd``), ``trigger`` and
``custom_instructions`` (``PreCompact``), ``message`` (``Notification``).

``tool_name`` is Claude Code's name for the tools both agents have (``Bash``, ``Read``,
``Write``, ``Edit``, ``MultiEdit``, ``Glob``, ``Grep``, ``LS``, ``WebFetch``) and ours for the
rest; ``tool_input`` carries ``file_path`` next to our ``path``. A matcher may name either
(``bash`` or ``Bash``), or be a regular expression over them (``Edit|Write``, ``mcp__.*``);
``""`` and ``*`` match every tool.

What a hook answers:

- exit 0: stdout, if it is a JSON object, may carry ``decision`` (``block``; ``approve`` is the
  old spelling of allow) with ``reason``, ``continue: false`` with ``stopReason``,
  ``systemMessage`` (shown to the user), and ``hookSpecificOutput`` with ``permissionDecision``
  (``allow``, ``deny``, ``ask``) and ``permissionDecisionReason`` (``PreToolUse``) or
  ``additionalContext``. Plain stdout of ``UserPromptSubmit`` and ``SessionStart`` hooks is
  context too. Context always rides at the tail of the next user message, never in the system
  prompt, so the cached prefix holds.
- exit 2: block. stderr is the reason: the model sees it for ``PreToolUse`` (the call is
  refused), ``PostToolUse`` (added to the result) and ``Stop`` (the turn goes on with it); the
  user sees it for ``UserPromptSubmit`` (the prompt is not sent).
- any other exit code, a crash, or a timeout: reported to the user; the turn goes on.

A hook never breaks a turn. It runs with the secret-free command environment plus
``CLAUDE_PROJECT_DIR`` (and ``REASONIX_PROJECT_DIR``) set to the workspace.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reasonix.config.hooks import HookCommand, HookGroup

if TYPE_CHECKING:
    from reasonix.tools.registry import Tool

#: Our permission modes as Claude Code names them in ``permission_mode``.
CLAUDE_PERMISSION_MODES: Mapping[str, str] = {
    "ask": "default",
    "auto-edit": "acceptEdits",
    "plan": "plan",
    "yolo": "bypassPermissions",
}
#: Events whose matcher is tested against the tool name.
TOOL_EVENTS = frozenset({"PreToolUse", "PostToolUse"})
MAX_HOOK_OUTPUT = 64_000


def claude_tool_name(tool: Tool) -> str:
    """What Claude Code calls ``tool`` (its first alias, :attr:`Tool.aliases`), for
    ``tool_name`` and for matchers written for Claude Code; else our own name."""
    return tool.aliases[0] if tool.aliases else tool.name


def claude_tool_input(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments with Claude Code's ``file_path`` added next to our ``path``."""
    out = dict(arguments)
    if isinstance(out.get("path"), str) and "file_path" not in out:
        out["file_path"] = out["path"]
    return out


def matches(matcher: str, *names: str) -> bool:
    """Whether ``matcher`` (exact name, regex, ``""`` or ``*``) selects any of ``names``."""
    text = matcher.strip()
    if text in ("", "*"):
        return True
    try:
        pattern = re.compile(text)
    except re.error:
        return text in names
    return any(pattern.fullmatch(n) for n in names if n)


@dataclass
class HookRun:
    """What one hook command did."""

    command: str
    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool = False
    error: str = ""

    @property
    def failed(self) -> bool:
        return self.timed_out or bool(self.error) or self.exit_code not in (0, 2)

    def problem(self) -> str:
        if self.timed_out:
            return f"hook `{self.command}` timed out and was stopped"
        if self.error:
            return f"hook `{self.command}` could not run: {self.error}"
        detail = self.stderr.strip()[:500]
        return f"hook `{self.command}` failed with exit code {self.exit_code}" + (
            f": {detail}" if detail else ""
        )


@dataclass
class HookOutcome:
    """All matching hooks of one event, merged. ``blocked`` with ``reason`` (exit 2, a
    ``block`` decision, ``continue: false``); ``permission`` the strongest
    ``permissionDecision`` (``deny`` over ``ask`` over ``allow``); ``context`` for the tail of
    the next user message; ``messages`` and ``problems`` for the user."""

    event: str
    blocked: bool = False
    reason: str = ""
    permission: str | None = None
    permission_reason: str = ""
    context: list[str] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    runs: list[HookRun] = field(default_factory=list)


_PERMISSION_STRENGTH = {"allow": 1, "ask": 2, "deny": 3}


class HookRunner:
    """Runs the configured hook groups for events.

    ``env`` is the base environment of hook commands (already free of secrets); ``base_input``
    returns the common fields (``session_id``, ``transcript_path``, ``permission_mode``).
    """

    def __init__(
        self,
        groups: Iterable[HookGroup],
        workspace: Path,
        *,
        env: Mapping[str, str],
        base_input: Callable[[], Mapping[str, Any]] | None = None,
    ) -> None:
        self.groups = tuple(groups)
        self.workspace = workspace
        self.env = {
            **env,
            "CLAUDE_PROJECT_DIR": str(workspace),
            "REASONIX_PROJECT_DIR": str(workspace),
        }
        self.base_input = base_input or dict

    def __bool__(self) -> bool:
        return bool(self.groups)

    def has(self, event: str) -> bool:
        return any(g.event == event for g in self.groups)

    def selected(self, event: str, *names: str) -> list[tuple[HookGroup, HookCommand]]:
        """The commands of ``event`` whose matcher selects ``names`` (for events without a
        matcher value, every group of the event)."""
        out: list[tuple[HookGroup, HookCommand]] = []
        for group in self.groups:
            if group.event != event:
                continue
            if names and not matches(group.matcher, *names):
                continue
            out.extend((group, command) for command in group.hooks)
        return out

    async def run(
        self, event: str, fields: Mapping[str, Any], *, match: Iterable[str] = ()
    ) -> HookOutcome:
        """Run every selected hook of ``event`` (concurrently) with ``fields`` added to the
        common input, and merge what they answered. Never raises for a hook's failure."""
        outcome = HookOutcome(event)
        chosen = self.selected(event, *match)
        if not chosen:
            return outcome
        payload = {
            **self.base_input(),
            "cwd": str(self.workspace),
            "hook_event_name": event,
            **fields,
        }
        data = json.dumps(payload, ensure_ascii=False, default=str).encode()
        runs = await asyncio.gather(*(self._run_one(c, data) for _g, c in chosen))
        for (group, _command), run in zip(chosen, runs, strict=True):
            outcome.runs.append(run)
            _merge(outcome, group, run)
        return outcome

    async def _run_one(self, command: HookCommand, stdin: bytes) -> HookRun:
        try:
            proc = await asyncio.create_subprocess_exec(
                "bash",
                "-c",
                command.command,
                cwd=self.workspace,
                env=self.env,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as exc:
            return HookRun(command.command, None, "", "", error=str(exc))
        try:
            out, err = await asyncio.wait_for(proc.communicate(stdin), command.timeout)
        except TimeoutError:
            _kill_group(proc)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(proc.wait(), 5)
            return HookRun(command.command, None, "", "", timed_out=True)
        except asyncio.CancelledError:
            _kill_group(proc)
            raise
        except (OSError, BrokenPipeError) as exc:
            _kill_group(proc)
            return HookRun(command.command, None, "", "", error=str(exc))
        return HookRun(
            command.command,
            proc.returncode,
            out[:MAX_HOOK_OUTPUT].decode("utf-8", "replace"),
            err[:MAX_HOOK_OUTPUT].decode("utf-8", "replace"),
        )


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
        os.killpg(proc.pid, signal.SIGKILL)


def _merge(outcome: HookOutcome, group: HookGroup, run: HookRun) -> None:
    event = outcome.event
    if run.failed:
        outcome.problems.append(f"{event} {run.problem()}")
        return
    if run.exit_code == 2:
        outcome.blocked = True
        reason = run.stderr.strip() or f"blocked by the {event} hook `{run.command}`"
        outcome.reason = _join(outcome.reason, reason)
        if event == "PreToolUse":
            _set_permission(outcome, "deny", reason)
        return
    text = run.stdout.strip()
    answer: Any = None
    if text.startswith("{"):
        try:
            answer = json.loads(text)
        except json.JSONDecodeError:
            answer = None
    if not isinstance(answer, dict):
        if text and event in ("UserPromptSubmit", "SessionStart"):
            outcome.context.append(text)
        return
    message = answer.get("systemMessage")
    if isinstance(message, str) and message.strip():
        outcome.messages.append(message.strip())
    reason = str(answer.get("reason") or "").strip()
    decision = answer.get("decision")
    if answer.get("continue") is False:
        outcome.blocked = True
        outcome.reason = _join(outcome.reason, str(answer.get("stopReason") or reason or ""))
    if decision == "block":
        outcome.blocked = True
        outcome.reason = _join(outcome.reason, reason or f"blocked by `{run.command}`")
        if event == "PreToolUse":
            _set_permission(outcome, "deny", reason)
    elif decision == "approve" and event == "PreToolUse" and not group.from_project:
        _set_permission(outcome, "allow", reason)
    specific = answer.get("hookSpecificOutput")
    if isinstance(specific, dict):
        wanted = specific.get("permissionDecision")
        why = str(specific.get("permissionDecisionReason") or reason or "").strip()
        # A project's hook may tighten (deny, ask) but not loosen what is allowed.
        loosens = wanted == "allow" and group.from_project
        if event == "PreToolUse" and wanted in _PERMISSION_STRENGTH and not loosens:
            _set_permission(outcome, str(wanted), why)
        extra = specific.get("additionalContext")
        if isinstance(extra, str) and extra.strip():
            outcome.context.append(extra.strip())


def _set_permission(outcome: HookOutcome, decision: str, reason: str) -> None:
    current = outcome.permission
    if current is None or _PERMISSION_STRENGTH[decision] > _PERMISSION_STRENGTH[current]:
        outcome.permission = decision
        outcome.permission_reason = reason
    elif decision == current and reason:
        outcome.permission_reason = _join(outcome.permission_reason, reason)


def _join(a: str, b: str) -> str:
    b = b.strip()
    if not b:
        return a
    return f"{a}\n{b}" if a else b


def load_settings_hooks(path: Path) -> tuple[Mapping[str, Any] | None, str]:
    """The ``hooks`` table of a ``.claude/settings.json`` (None when absent), or a problem."""
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, ""
    except OSError as exc:
        return None, f"{path}: cannot read it ({exc.strerror})"
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        return None, f"{path}: not valid JSON ({exc.msg} at line {exc.lineno}); hooks skipped"
    hooks = data.get("hooks") if isinstance(data, dict) else None
    if hooks is None:
        return None, ""
    if not isinstance(hooks, dict):
        return None, f'{path}: "hooks" should be an object of events; hooks skipped'
    return hooks, ""
