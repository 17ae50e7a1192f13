"""Prefix size: the tokens every request of a role pays before any conversation — the system
prompt and the tool schemas — counted the way the fake server counts them (its deterministic
tokenisation, ~4 characters per token), with the default tools. The Go original sends about
11k tokens to its executor and 15k to its planner."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from bench.common import print_table
from reasonix.agent import Agent, AgentOptions
from reasonix.control import Controller, Options
from reasonix.messages import canonical_json
from reasonix.testing import ScriptedProvider
from reasonix.testing.fake_server import render_message, render_prompt, tokenize
from reasonix.tools.registry import ToolRegistry


def _count(text: str) -> int:
    return len(tokenize([text]))


def measure(agent: Agent) -> dict[str, Any]:
    system = {"role": "system", "content": agent.options.system_prompt}
    schemas = list(agent.tools.schemas())
    total = len(tokenize(render_prompt({"tools": schemas, "messages": [system]})))
    per_tool = {s["function"]["name"]: _count(canonical_json(s)) for s in schemas}
    return {
        "tokens": total,
        "system_prompt_tokens": _count(render_message(system)),
        "tool_schema_tokens": total - _count(render_message(system)),
        "tools": len(schemas),
        "chars": len(agent.options.system_prompt) + len(canonical_json(schemas)),
        "largest_tools": dict(sorted(per_tool.items(), key=lambda kv: -kv[1])[:5]),
    }


def run_prefix(quick: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        ctrl = Controller(
            Options(
                executor_provider=ScriptedProvider([]),
                planner_provider=ScriptedProvider([]),
                tool_registry=ToolRegistry.default(Path(tmp)),
                executor_options=AgentOptions(workspace=Path(tmp)),
            )
        )
        assert ctrl.planner is not None
        out = {"executor": measure(ctrl.executor), "planner": measure(ctrl.planner)}
    go = {"executor": 11_000, "planner": 15_000}
    rows = [
        [
            role,
            m["tokens"],
            m["system_prompt_tokens"],
            m["tool_schema_tokens"],
            m["tools"],
            f"~{go[role]:,}",
            ", ".join(f"{k} {v}" for k, v in m["largest_tools"].items()),
        ]
        for role, m in out.items()
    ]
    print_table(
        "Stable prefix before any conversation (fake-server tokens, default tools)",
        rows,
        ["role", "tokens", "system", "tool schemas", "tools", "Go original", "largest schemas"],
    )
    return out
