"""Every tool reasonix itself builds, each from its own constructor: the built-ins, the plan
and todo tools, memory, goals, ``ask``, jobs, subagents, skills, ``more_tools`` and the MCP
proxies. Tests that hold a property for every built-in iterate this list."""

from __future__ import annotations

from pathlib import Path

from reasonix.agent.agent import AgentOptions
from reasonix.agent.memory import remember_tool
from reasonix.control.delegation import Delegator, WriterSetup
from reasonix.control.goal import update_goal_tool
from reasonix.control.plan import submit_plan_tool
from reasonix.control.todo_tools import executor_plan_tools
from reasonix.extensions.skills import Skill, skill_tool
from reasonix.mcp.overflow import McpRoute
from reasonix.testing import ScriptedProvider
from reasonix.tools.ask import ask_tool
from reasonix.tools.builtin import default_tools
from reasonix.tools.builtin.jobs import JobTable, job_tools
from reasonix.tools.builtin.web_search import SearchOptions, search_tool
from reasonix.tools.deferred import discovery_tool
from reasonix.tools.registry import Tool, ToolRegistry


def every_builtin_tool(tmp_path: Path) -> list[Tool]:
    """One of each tool reasonix builds (not the MCP servers' own tools)."""
    files = default_tools(tmp_path)
    registry = ToolRegistry(files)
    delegator = Delegator(
        ScriptedProvider([]),
        registry,
        AgentOptions(),
        writers=WriterSetup(tmp_path / "copies", tmp_path, lambda copy: registry),
    )
    skill = Skill("demo", "a demo skill", tmp_path / "skills" / "demo", "project", ())
    skills = skill_tool({"demo": skill})
    assert skills is not None
    deferred = ToolRegistry(files).defer(["delete_file"])
    return [
        *files,
        *executor_plan_tools(),
        submit_plan_tool(),
        remember_tool(),
        update_goal_tool(),
        ask_tool(),
        *job_tools(JobTable(tmp_path / "jobs")),
        *delegator.tools(),
        skills,
        search_tool(SearchOptions("http://127.0.0.1:9/search")),
        discovery_tool(deferred),
        *McpRoute([], None).proxies(),
    ]
