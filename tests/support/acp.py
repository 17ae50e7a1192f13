"""The editor's side of ``reasonix acp`` for end-to-end tests: a client that records updates
and answers permission questions, and the agent process it talks to."""

from __future__ import annotations

import asyncio
import sys
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from acp import schema as s
from acp import spawn_agent_process

from tests.support.project import Project


class EditorClient:
    """The editor's side: records every update, answers permission questions from a script."""

    def __init__(self, answers: list[str] | None = None) -> None:
        self.updates: list[Any] = []
        self.permission_calls: list[s.ToolCallUpdate] = []
        self.answers = list(answers or [])

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)

    async def request_permission(
        self, session_id: str, tool_call: s.ToolCallUpdate, options: list[Any], **kwargs: Any
    ) -> s.RequestPermissionResponse:
        self.permission_calls.append(tool_call)
        assert {o.kind for o in options} == {"allow_once", "allow_always", "reject_once"}
        answer = self.answers.pop(0) if self.answers else "deny"
        return s.RequestPermissionResponse(
            outcome=s.AllowedOutcome(outcome="selected", option_id=answer)
        )

    def on_connect(self, conn: Any) -> None:
        pass

    def kinds(self) -> Counter[str]:
        return Counter(u.session_update for u in self.updates)

    def of(self, kind: type) -> list[Any]:
        return [u for u in self.updates if isinstance(u, kind)]

    def text(self) -> str:
        return "".join(u.content.text for u in self.updates if isinstance(u, s.AgentMessageChunk))


@asynccontextmanager
async def acp_agent(
    project: Project, client: EditorClient, env: dict[str, str] | None = None
) -> AsyncIterator[Any]:
    """The agent process with its stderr in ``project.root/../acp-stderr.log`` (an unread pipe
    would fill up and block it)."""
    log = (project.root.parent / "acp-stderr.log").open("ab")
    async with spawn_agent_process(
        client,
        sys.executable,
        "-m",
        "reasonix",
        "acp",
        env=env or project.env(),
        cwd=project.root,
        # A loaded machine can take more than the SDK's default 2 s to let the process exit
        # after stdin closes; its terminate() then races the exit.
        transport_kwargs={"stderr": log.fileno(), "shutdown_timeout": 30.0},
    ) as (conn, process):
        init = await asyncio.wait_for(conn.initialize(protocol_version=1), 30)
        assert init.agent_info is not None and init.agent_info.name == "reasonix"
        try:
            yield conn
            assert process.returncode is None, "the agent exited while the client was connected"
        finally:
            log.close()


def text(t: str) -> list[s.TextContentBlock]:
    return [s.TextContentBlock(type="text", text=t)]
