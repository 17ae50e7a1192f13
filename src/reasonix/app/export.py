"""``/export [file]``: the session's transcript as markdown, written to a new file.

The transcript is what each role's conversation holds, as it was sent: the user's turns, the
model's answers (its reasoning, folded), every tool call with its arguments and every result
in full. Text from the conversation is fenced with a fence longer than any run of backticks
in it, so nothing in a message can close the block early. The file is created, never
replaced: a name that exists is refused and nothing is written.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from reasonix.errors import SessionError
from reasonix.fences import code_fence
from reasonix.messages import AssistantMessage, SystemMessage, ToolMessage, UserMessage

if TYPE_CHECKING:
    from reasonix.app.session import AgentSession
    from reasonix.messages import Message

__all__ = ["default_export_name", "export_transcript", "transcript_markdown"]


def default_export_name(session_id: str) -> str:
    """``reasonix-<session id>.md``: the file ``/export`` writes without a name."""
    return f"reasonix-{session_id}.md"


def _fence(text: str, info: str = "") -> str:
    return code_fence(text.rstrip(), info)


def _arguments(raw: str) -> str:
    try:
        return json.dumps(json.loads(raw), indent=2, ensure_ascii=False)
    except ValueError:
        return raw


def _messages(messages: Sequence[Message]) -> list[str]:
    out: list[str] = []
    turn = 0
    for message in messages:
        if isinstance(message, UserMessage):
            turn += 1
            out += [f"### Turn {turn}: user", "", _fence(message.content), ""]
        elif isinstance(message, AssistantMessage):
            out += ["#### Assistant", ""]
            if message.reasoning_content:
                out += [
                    "<details><summary>Reasoning</summary>",
                    "",
                    _fence(message.reasoning_content),
                    "",
                    "</details>",
                    "",
                ]
            if message.content:
                out += [message.content.rstrip(), ""]
            for call in message.tool_calls:
                out += [
                    f"Tool call `{call.name}` ({call.id}):",
                    "",
                    _fence(_arguments(call.arguments), "json"),
                    "",
                ]
        elif isinstance(message, ToolMessage):
            error = " (error)" if message.is_error else ""
            out += [f"Result of `{message.name or message.tool_call_id}`{error}:", ""]
            out += [_fence(message.content), ""]
        elif isinstance(message, SystemMessage):
            out += ["#### System (a summary of earlier history)", "", _fence(message.content), ""]
    return out


def transcript_markdown(session: AgentSession) -> str:
    """The transcript of ``session``: a header (id, folder, models, when), then each role's
    conversation."""
    ctrl = session.controller
    lines = [
        f"# reasonix session {session.session_id}",
        "",
        f"- folder: `{session.workspace}`",
        *(f"- {role}: `{model}`" for role, model in session.models().items()),
        f"- exported: {time.strftime('%Y-%m-%d %H:%M:%S %z')}",
        "",
    ]
    agents = [(t, a) for t, a in (("Executor", ctrl.executor), ("Planner", ctrl.planner)) if a]
    for title, agent in agents:
        if len(agent.session):
            lines += [f"## {title}", "", *_messages(agent.session.snapshot())]
    if not any(len(agent.session) for _, agent in agents):
        lines += ["No messages yet.", ""]
    return "\n".join(lines).rstrip() + "\n"


def export_transcript(session: AgentSession, name: str | None = None) -> Path:
    """Write the transcript to ``name`` (relative to the workspace; default
    :func:`default_export_name`) and return the path. Raises SessionError when the file
    exists (it is left as it was) or cannot be created."""
    path = Path(os.path.expanduser(name)) if name else Path(default_export_name(session.session_id))
    if not path.is_absolute():
        path = session.workspace / path
        # A relative name stays in the workspace: a folder on the way may be a symlink a
        # repository committed (``notes -> ../elsewhere``), which would put the file outside.
        root = os.path.realpath(session.workspace)
        parent = os.path.realpath(path.parent)
        if os.path.commonpath([root, parent]) != root:
            raise SessionError(
                f"{name} leads outside the workspace (through a symbolic link to {parent}); "
                "nothing was written. Give an absolute path if you mean to write there."
            )
    text = transcript_markdown(session)
    try:
        # O_EXCL: never replace a file (nor write through a symlink planted at the name).
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        raise SessionError(
            f"{path} exists; nothing was written. Give /export another file name."
        ) from None
    except OSError as exc:
        raise SessionError(f"cannot create {path}: {exc.strerror}") from None
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)
    return path
