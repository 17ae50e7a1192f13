"""Sessions as the CLI builds them: the user's config pointing at two FakeDeepSeekServers, loaded
by :func:`reasonix.config.load_config` and opened by :meth:`reasonix.app.AgentSession.open` —
the same assembly ``reasonix run --yes`` uses (same tools, system prompts, defaults, approver).
Only the model's words are scripted; every figure comes from what the fake servers received.
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reasonix.agent.compaction import SUMMARY_INSTRUCTION
from reasonix.app import AgentSession
from reasonix.config import load_config
from reasonix.events import CollectingSink
from reasonix.messages import canonical_json
from reasonix.store import SessionStore
from reasonix.testing import FakeDeepSeekServer, Reply
from reasonix.testing.fake_server import RecordedRequest, tokenize
from reasonix.testing.project import fake_project_toml

EXECUTOR_MODEL = "deepseek-flash"
PLANNER_MODEL = "deepseek-v4-pro"
UNIT_TOKENS = 64
KEY_ENV = "REASONIX_BENCH_KEY"


def is_summary(request: RecordedRequest) -> bool:
    messages = request.messages
    return bool(messages) and messages[-1].get("content") == SUMMARY_INSTRUCTION


class Script:
    """Replies served in order; compaction's summary requests are answered on the side (with
    ``summary``), so a script does not depend on when a compaction fires."""

    def __init__(self, summary: str = "Summary: work continues as planned.") -> None:
        self.queue: deque[Reply] = deque()
        self.problems: list[str] = []
        self.summary = summary

    def push(self, *replies: Reply) -> None:
        self.queue.extend(replies)

    def __call__(self, request: RecordedRequest) -> Reply:
        if is_summary(request):
            return Reply.text(self.summary)
        if not self.queue:
            self.problems.append(f"script exhausted at request {request.index}")
            return Reply.text("(script exhausted)")
        return self.queue.popleft()


@dataclass
class Shipped:
    """An open session with its two fake servers and scripts."""

    session: AgentSession
    executor: FakeDeepSeekServer
    planner: FakeDeepSeekServer
    executor_script: Script
    planner_script: Script
    sink: CollectingSink
    workspace: Path
    problems: list[str] = field(default_factory=list)

    def check(self) -> list[str]:
        """What went wrong on the wire or in the scripts (empty when the run is clean)."""
        out = [*self.executor_script.problems, *self.planner_script.problems]
        for name, server in (("executor", self.executor), ("planner", self.planner)):
            out += [f"{name}: {e}" for e in server.errors]
            out += [
                f"{name} request {r.index}: {r.status} {r.error}"
                for r in server.requests
                if r.status != 200
            ]
        return out


@asynccontextmanager
async def shipped_session(
    root: Path, *, config_extra: str = "", summary: str | None = None
) -> AsyncIterator[Shipped]:
    """Open a session in ``root/ws`` as the CLI would, with the user's config in
    ``root/config`` (plus ``config_extra`` TOML tables) and the store in ``root/data``."""
    ws, conf, data = root / "ws", root / "config", root / "data"
    for d in (ws, conf, data):
        d.mkdir(parents=True, exist_ok=True)
    ex_script = Script(summary) if summary else Script()
    pl_script = Script()
    sink = CollectingSink()
    environ = {KEY_ENV: "sk-bench", "REASONIX_CONFIG_DIR": str(conf)}
    async with (
        FakeDeepSeekServer(handler=ex_script, unit_tokens=UNIT_TOKENS) as ex,
        FakeDeepSeekServer(handler=pl_script, unit_tokens=UNIT_TOKENS) as pl,
    ):
        user = conf / "config.toml"
        user.write_text(fake_project_toml(ex.base_url, pl.base_url, key_env=KEY_ENV) + config_extra)
        config = load_config(ws, environ=environ, user_config=user)
        from reasonix.app.headless import YesApprover, approve_all_plans

        store = SessionStore(data / "sessions.db")
        try:
            session = await AgentSession.open(
                config,
                ws,
                store=store,
                approver=YesApprover(),
                plan_approver=approve_all_plans,
                sink=sink,
                environ=environ,
            )
            try:
                yield Shipped(session, ex, pl, ex_script, pl_script, sink, ws)
            finally:
                await session.aclose()
        finally:
            store.close()


def count(text: str) -> int:
    return len(tokenize([text]))


def prefix_of(request: RecordedRequest) -> dict[str, Any]:
    """A request's fixed prefix: its tools (tokens per schema) and its system prompt."""
    tools = list(request.body.get("tools") or [])
    per_tool = {t["function"]["name"]: count(canonical_json(t)) for t in tools}
    system = next((m for m in request.messages if m.get("role") == "system"), {})
    return {
        "request_tokens": request.prompt_tokens or 0,
        "tools": len(tools),
        "tool_schema_tokens": sum(per_tool.values()),
        "system_prompt_tokens": count(str(system.get("content") or "")),
        "per_tool": dict(sorted(per_tool.items(), key=lambda kv: -kv[1])),
    }


PLAN_ARGS = {
    "objective": "Add the helper and its test",
    "steps": [
        {
            "title": "Add util.py with double()",
            "files": ["util.py"],
            "acceptance": "double(2) == 4",
            "verify": "python3 -c 'import util; assert util.double(2) == 4'",
        }
    ],
    "risks": [],
}


async def first_requests(root: Path) -> dict[str, dict[str, Any]]:
    """The executor's and the planner's first requests as the CLI sends them."""
    async with shipped_session(root) as s:
        s.executor_script.push(Reply.text("Hello."))
        s.planner_script.push(Reply.call("submit_plan", PLAN_ARGS))
        # The executor stops with the plan's step open, and again after the nudge (only the
        # first requests are measured here).
        s.executor_script.push(Reply.text("Done."), Reply.text("Done."))
        await s.session.run_turn("hi")
        await s.session.run_turn("plan first: add util.py with double() and a test")
        problems = s.check()
        if problems:
            raise RuntimeError("; ".join(problems))
        return {
            "executor": prefix_of(s.executor.requests[0]),
            "planner": prefix_of(s.planner.requests[0]),
        }
