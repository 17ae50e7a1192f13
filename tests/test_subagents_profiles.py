"""Subagent profiles through the real CLI: a Claude Code ``.claude/agents/*.md`` profile chosen
with ``subagent_type`` in a trusted folder (its prompt, its tools, its model and that model's
prices), ignored with a notice in an untrusted one, a user-level profile, and an unknown type."""

from __future__ import annotations

import json
from typing import Any

import pytest

from reasonix.providers.models import Prices, get_model_info
from reasonix.testing import Reply
from reasonix.testing.fake_server import RecordedRequest
from tests.support.project import Project, json_lines, project, project_toml

__all__ = ["project"]

pytestmark = pytest.mark.slow

REVIEWER = """\
---
name: reviewer
description: Reviews a change for bugs and reports them, with file and line.
tools: Read, Grep, Glob
model: deepseek-v4-pro
---
You are a careful code reviewer. REVIEWER-PROMPT-MARK.
"""

SCRIBE = """\
---
name: scribe
description: Writes summaries.
model: inherit
---
You summarise. SCRIBE-PROMPT-MARK.
"""


def _user_config_only(project: Project, *, trusted: bool) -> None:
    """The providers in the user's own config (a project file only counts when trusted)."""
    (project.root / "reasonix.toml").unlink()
    trust = f"[trust]\nfolders = [{json.dumps(str(project.root))}]\n" if trusted else ""
    (project.config_dir / "config.toml").write_text(trust + project_toml(project.ex, project.pl))


def _is_child(request: RecordedRequest, mark: str) -> bool:
    return mark in str(request.messages[0].get("content", ""))


def delegating(subagent_type: str) -> Any:
    def reply(request: RecordedRequest) -> Reply:
        steps = sum(1 for m in request.messages if m.get("role") == "assistant")
        if "PROMPT-MARK" in str(request.messages[0].get("content", "")):
            return Reply.text("No bugs found in greet.py.")
        if steps == 0:
            return Reply.call(
                "task",
                {
                    "description": "review",
                    "prompt": "Review greet.py",
                    "subagent_type": subagent_type,
                },
            )
        return Reply.text("Reviewed.")

    return reply


def _tool_results(request: RecordedRequest) -> list[str]:
    return [str(m["content"]) for m in request.messages if m.get("role") == "tool"]


def test_claude_profile_in_a_trusted_folder(project: Project) -> None:
    agents = project.root / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "reviewer.md").write_text(REVIEWER)
    _user_config_only(project, trusted=True)
    project.ex.handler = delegating("reviewer")
    proc = project.run("run", "--no-planner", "--output-format", "json", "review it")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (result,) = json_lines(proc.stdout)

    parent = [r for r in project.ex.requests if not _is_child(r, "REVIEWER-PROMPT-MARK")]
    child = [r for r in project.ex.requests if _is_child(r, "REVIEWER-PROMPT-MARK")]
    # The task tool lists the profile (fixed for the session: one schema for every request).
    task = next(t for t in parent[0].body["tools"] if t["function"]["name"] == "task")
    assert "- reviewer: Reviews a change for bugs" in task["function"]["description"]
    assert len({json.dumps(r.body["tools"]) for r in parent}) == 1
    # The child: the profile's body as its system prompt, only its tools, its model.
    (req,) = child
    assert req.messages[0]["content"] == "You are a careful code reviewer. REVIEWER-PROMPT-MARK.\n"
    assert {t["function"]["name"] for t in req.body["tools"]} == {"read_file", "grep", "glob"}
    assert req.body["model"] == "deepseek-v4-pro"
    assert parent[0].body["model"] == "deepseek-flash"
    (figures,) = result["subagents"]
    assert figures["profile"] == "reviewer" and figures["model"] == "deepseek-v4-pro"
    # Priced by its own model's list prices, not the executor's.
    usage = result["usage"]["subagent"]
    pro, flash = get_model_info("deepseek-v4-pro").prices, get_model_info("deepseek-flash").prices
    assert pro.miss != flash.miss

    def price(p: Prices) -> float:
        tokens = (usage["cache_hit_tokens"], usage["cache_miss_tokens"], usage["completion_tokens"])
        return (tokens[0] * p.hit + tokens[1] * p.miss + tokens[2] * p.output) / 1e6

    # (times 2 in DeepSeek's peak hours)
    ratio = usage["cost_usd"] / price(pro)
    assert ratio == pytest.approx(1.0, rel=1e-3) or ratio == pytest.approx(2.0, rel=1e-3)
    assert figures["cost_usd"] == pytest.approx(result["cost_usd"]["subagent"], abs=1e-8)


def test_project_profiles_are_ignored_with_a_notice_in_an_untrusted_folder(
    project: Project,
) -> None:
    agents = project.root / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "reviewer.md").write_text(REVIEWER)
    _user_config_only(project, trusted=False)
    project.ex.handler = delegating("reviewer")
    proc = project.run("run", "--no-planner", "--output-format", "stream-json", "review it")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = json_lines(proc.stdout)
    notices = [e["message"] for e in lines if e.get("kind") == "notice"]
    assert any(
        "Subagent profiles in .claude/agents were ignored: this folder is not trusted" in n
        for n in notices
    )
    task = next(t for t in project.ex.requests[0].body["tools"] if t["function"]["name"] == "task")
    assert "reviewer" not in task["function"]["description"]
    assert not any(_is_child(r, "REVIEWER-PROMPT-MARK") for r in project.ex.requests)
    # The model asked for it anyway: the default subagent ran, and the result says why.
    (report,) = _tool_results(project.ex.requests[-1])
    assert report.startswith(
        "[Note: there is no subagent_type 'reviewer' (available: general-purpose, Explore, "
        "Plan); the default subagent ran.]"
    )


def test_user_profile_and_unknown_type(project: Project) -> None:
    (project.config_dir / "agents").mkdir()
    (project.config_dir / "agents" / "scribe.md").write_text(SCRIBE)
    project.ex.handler = delegating("scribe")
    proc = project.run("run", "--no-planner", "--output-format", "json", "summarise")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (result,) = json_lines(proc.stdout)
    (figures,) = result["subagents"]
    assert figures["profile"] == "scribe" and figures["model"] == "deepseek-flash"
    child = [r for r in project.ex.requests if _is_child(r, "SCRIBE-PROMPT-MARK")]
    assert len(child) == 1 and "task" not in {t["function"]["name"] for t in child[0].body["tools"]}

    project.ex.handler = delegating("nobody")
    proc = project.run("run", "--no-planner", "--output-format", "json", "summarise")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (report,) = _tool_results(project.ex.requests[-1])
    assert report.startswith(
        "[Note: there is no subagent_type 'nobody' (available: scribe, general-purpose, "
        "Explore, Plan); the default subagent ran.]"
    )
