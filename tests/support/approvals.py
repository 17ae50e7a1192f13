"""A scripted approver and a harness that runs the real built-in tools behind a permission
engine, as the permission tests use them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from reasonix.safety.permissions import ApprovalAnswer, ApprovalRequest, PermissionEngine
from reasonix.tools.builtin import default_tools
from reasonix.tools.registry import Tool, ToolContext, ToolRegistry, ToolResult


class ScriptedApprover:
    """Answers approval requests from a list, recording what it was asked; once the list is
    used up, every further request is denied."""

    def __init__(self, *answers: ApprovalAnswer) -> None:
        self.answers = list(answers)
        self.requests: list[ApprovalRequest] = []

    async def approve(self, request: ApprovalRequest) -> ApprovalAnswer:
        self.requests.append(request)
        return self.answers.pop(0) if self.answers else ApprovalAnswer.deny("no")


class Harness:
    """Calls tools by name as the model would: the built-in tools of ``ws`` (plus ``extra``),
    every call decided by ``engine``."""

    def __init__(self, ws: Path, engine: PermissionEngine, extra: list[Tool] | None = None) -> None:
        self.ws = ws
        self.engine = engine
        tools = [*default_tools(ws, use_rg=False), *(extra or [])]
        self.registry = ToolRegistry(tools, policy=engine)

    async def __call__(self, name: str, **args: Any) -> ToolResult:
        return await self.registry.execute(name, json.dumps(args), ToolContext(workspace=self.ws))


def denied(result: ToolResult) -> bool:
    """The permission layer refused the call (its typed refusal, not the result's wording)."""
    return result.refused
