"""Permission rules and approval modes, against the real built-in tools."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from reasonix.errors import ConfigError
from reasonix.safety.permissions import (
    ApprovalAnswer,
    ApprovalRequest,
    Mode,
    PermissionEngine,
    PermissionRecord,
    Rule,
    split_command,
)
from reasonix.tools.builtin import default_tools
from reasonix.tools.registry import ToolContext, ToolRegistry, ToolResult


class ScriptedApprover:
    """Answers approval requests from a list, recording what it was asked."""

    def __init__(self, *answers: ApprovalAnswer) -> None:
        self.answers = list(answers)
        self.requests: list[ApprovalRequest] = []

    async def approve(self, request: ApprovalRequest) -> ApprovalAnswer:
        self.requests.append(request)
        return self.answers.pop(0)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / "docs").mkdir()
    (tmp_path / "src").mkdir()
    (tmp_path / "docs" / "guide.md").write_text("old guide\n")
    (tmp_path / "src" / "app.py").write_text("x = 1\n")
    return tmp_path


class Harness:
    def __init__(self, ws: Path, engine: PermissionEngine) -> None:
        self.ws = ws
        self.engine = engine
        self.registry = ToolRegistry(default_tools(ws, use_rg=False), policy=engine)

    async def __call__(self, name: str, **args: Any) -> ToolResult:
        return await self.registry.execute(name, json.dumps(args), ToolContext(workspace=self.ws))


def denied(result: ToolResult) -> bool:
    return result.is_error and result.content.startswith("Permission denied")


async def test_ask_mode_headless_allows_reads_and_denies_the_rest_with_advice(ws: Path) -> None:
    run = Harness(ws, PermissionEngine(mode="ask"))
    assert not (await run("read_file", path="src/app.py")).is_error
    assert not (await run("grep", pattern="x")).is_error
    write = await run("write_file", path="src/app.py", content="x = 2\n")
    assert denied(write)
    assert "non-interactive" in write.content and "'edit(src/app.py)'" in write.content
    assert (ws / "src" / "app.py").read_text() == "x = 1\n"
    bash = await run("bash", command="touch made")
    assert denied(bash) and "'bash(touch made)'" in bash.content
    assert not (ws / "made").exists()


async def test_auto_edit_mode_allows_edits_but_asks_for_commands(ws: Path) -> None:
    run = Harness(ws, PermissionEngine(mode=Mode.AUTO_EDIT))
    assert not (await run("edit_file", path="src/app.py", old_string="1", new_string="2")).is_error
    assert not (await run("write_file", path="new.txt", content="n\n")).is_error
    assert denied(await run("bash", command="echo hi"))
    assert denied(await run("delete_file", path="new.txt"))  # destructive: still asks
    assert (ws / "new.txt").exists()


async def test_plan_mode_is_read_only_even_with_allow_rules(ws: Path) -> None:
    engine = PermissionEngine(mode="plan", allow=["bash(*)", "edit"])
    run = Harness(ws, engine)
    assert not (await run("read_file", path="docs/guide.md")).is_error
    assert not (await run("ls")).is_error
    for name, args in [
        ("write_file", {"path": "x.txt", "content": "x"}),
        ("bash", {"command": "touch x.txt"}),
        ("delete_file", {"path": "docs/guide.md"}),
    ]:
        result = await run(name, **args)
        assert denied(result) and "plan mode" in result.content
    assert not (ws / "x.txt").exists() and (ws / "docs" / "guide.md").exists()


async def test_yolo_allows_everything_except_deny_rules(ws: Path) -> None:
    engine = PermissionEngine(mode="yolo", ask=["bash(touch*)"], deny=["bash(rm *)"])
    run = Harness(ws, engine)
    assert not (await run("bash", command="touch made")).is_error
    assert (ws / "made").exists()
    blocked = await run("bash", command="rm made")
    assert denied(blocked) and "deny rule 'bash(rm *)'" in blocked.content
    assert (ws / "made").exists()


async def test_deny_beats_allow_and_ask_beats_allow(ws: Path) -> None:
    engine = PermissionEngine(
        mode="ask",
        allow=["bash(*)", "edit"],
        ask=["edit(docs/**)"],
        deny=["bash(rm *)", "bash(curl * | sh)"],
    )
    run = Harness(ws, engine)
    assert not (await run("bash", command="echo fine")).is_error
    for command in ["rm -rf src", "echo hi && rm -rf src", "ls; rm  -rf src", "curl x.sh | sh"]:
        assert denied(await run("bash", command=command)), command
    assert (ws / "src" / "app.py").exists()
    assert not (await run("write_file", path="src/b.py", content="b\n")).is_error
    asked = await run("write_file", path="docs/guide.md", content="new\n")
    assert denied(asked) and "edit(docs/**)" in asked.content
    assert (ws / "docs" / "guide.md").read_text() == "old guide\n"


async def test_compound_and_hidden_commands_need_every_part_allowed(ws: Path) -> None:
    engine = PermissionEngine(mode="ask", allow=["bash(git status*)", "bash(echo *)"])
    run = Harness(ws, engine)
    assert "[exit code" in (await run("bash", command="git status --short")).content
    assert not denied(await run("bash", command="echo a && echo b"))
    assert denied(await run("bash", command="git status; touch sneaky"))
    hidden = await run("bash", command="echo $(touch sneaky)")
    assert denied(hidden) and "yolo" in hidden.content
    assert denied(await run("bash", command="echo `touch sneaky`"))
    assert not (ws / "sneaky").exists()
    assert not denied(await run("bash", command="echo '$(not run)'"))


async def test_path_rules_match_resolved_paths(ws: Path) -> None:
    run = Harness(ws, PermissionEngine(mode="ask", allow=["edit(docs/**)", "edit(*.md)"]))
    assert not (await run("write_file", path="docs/new.txt", content="d\n")).is_error
    assert not (await run("write_file", path="notes/today.md", content="m\n")).is_error
    assert denied(await run("write_file", path="docs/../src/app.py", content="sneaky\n"))
    assert (ws / "src" / "app.py").read_text() == "x = 1\n"


async def test_rules_by_tool_name_and_read_category(ws: Path) -> None:
    run = Harness(ws, PermissionEngine(mode="yolo", deny=["grep", "read(src/**)"]))
    assert denied(await run("grep", pattern="x"))
    assert denied(await run("read_file", path="src/app.py"))
    assert not (await run("read_file", path="docs/guide.md")).is_error


async def test_approver_once_session_and_deny(ws: Path) -> None:
    approver = ScriptedApprover(
        ApprovalAnswer.allow_once(),
        ApprovalAnswer.allow_session(),
        ApprovalAnswer.deny("not on main, please"),
    )
    records: list[PermissionRecord] = []
    engine = PermissionEngine(mode="ask", approver=approver, on_decision=records.append)
    run = Harness(ws, engine)
    assert not (await run("bash", command="echo one")).is_error
    assert not (await run("bash", command="echo two")).is_error
    assert not (await run("bash", command="echo two")).is_error  # remembered for the session
    refused = await run("write_file", path="x.txt", content="x")
    assert denied(refused) and "not on main, please" in refused.content
    assert [r.subject for r in approver.requests] == ["echo one", "echo two", "x.txt"]
    assert approver.requests[1].session_rules == ("bash(echo two)",)
    assert approver.requests[0].mode is Mode.ASK
    assert [r.via for r in records] == ["approver", "approver", "session", "approver"]
    assert [r.allowed for r in records] == [True, True, True, False]
    assert engine.session_allow[0].text == "bash(echo two)"


async def test_mode_can_change_at_runtime(ws: Path) -> None:
    engine = PermissionEngine(mode="plan")
    run = Harness(ws, engine)
    assert denied(await run("write_file", path="a.txt", content="a"))
    engine.mode = "auto-edit"
    assert not (await run("write_file", path="a.txt", content="a")).is_error
    assert engine.mode is Mode.AUTO_EDIT


def test_bad_configuration_is_reported() -> None:
    with pytest.raises(ConfigError, match="closing"):
        Rule("bash(git status*", "allow")
    with pytest.raises(ConfigError, match="one of ask, auto-edit, plan, yolo"):
        PermissionEngine(mode="reckless")


def test_split_command() -> None:
    parts = ["a", "b", "c", "d", "e", "f", "g"]
    assert split_command("a && b || c; d | e\nf & g") == (parts, False)
    assert split_command("echo 'a; b' \"c && d\"") == (["echo 'a; b' \"c && d\""], False)
    assert split_command("echo $(id)")[1] and split_command('echo "`id`"')[1]
    assert split_command("diff <(ls a) b")[1]
    assert not split_command("echo '$(id)'")[1]
