"""Review findings in the permission rules: each test is an attack that used to get through."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from reasonix.safety.permissions import (
    ApprovalAnswer,
    ApprovalRequest,
    PermissionEngine,
    scan_command,
)
from reasonix.tools.builtin import default_tools
from reasonix.tools.registry import Tool, ToolContext, ToolRegistry, ToolResult


class ScriptedApprover:
    def __init__(self, *answers: ApprovalAnswer) -> None:
        self.answers = list(answers)
        self.requests: list[ApprovalRequest] = []

    async def approve(self, request: ApprovalRequest) -> ApprovalAnswer:
        self.requests.append(request)
        return self.answers.pop(0) if self.answers else ApprovalAnswer.deny("no")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "docs").mkdir()
    (tmp_path / "src" / "app.py").write_text("TOKEN = 'src-secret'\n")
    (tmp_path / "docs" / "guide.md").write_text("guide\n")
    (tmp_path / "made").write_text("keep me\n")
    return tmp_path


class Harness:
    def __init__(self, ws: Path, engine: PermissionEngine, extra: list[Tool] | None = None) -> None:
        self.ws = ws
        tools = [*default_tools(ws, use_rg=False), *(extra or [])]
        self.registry = ToolRegistry(tools, policy=engine)

    async def __call__(self, name: str, **args: Any) -> ToolResult:
        return await self.registry.execute(name, json.dumps(args), ToolContext(workspace=self.ws))


def denied(result: ToolResult) -> bool:
    return result.is_error and result.content.startswith("Permission denied")


async def test_ansi_c_quote_cannot_hide_a_second_command(ws: Path) -> None:
    # In bash $'\'' is one quote character, so "; touch sneaky" runs as its own command.
    run = Harness(ws, PermissionEngine(mode="ask", allow=["bash(echo *)"]))
    result = await run("bash", command="echo $'\\''; touch sneaky")
    assert denied(result)
    assert not (ws / "sneaky").exists()
    assert scan_command("echo $'\\''; touch x").parts == ["echo $'\\''", "touch x"]
    assert scan_command("echo $'a;b'").parts == ["echo $'a;b'"]


async def test_prefix_allow_rule_does_not_cover_a_redirection_into_a_file(ws: Path) -> None:
    run = Harness(ws, PermissionEngine(mode="ask", allow=["bash(git status*)", "bash(echo *)"]))
    for command in [
        "git status > pwned.txt",
        "git status >> pwned.txt",
        "git status &> pwned.txt",
        "git status >& pwned.txt",
        "echo x >pwned.txt",
    ]:
        result = await run("bash", command=command)
        assert denied(result) and "redirection" in result.content, command
    assert not (ws / "pwned.txt").exists()
    for command in ["git status 2>&1", "git status >/dev/null 2>&1", "echo a 2>&1 | echo b"]:
        assert not denied(await run("bash", command=command)), command


async def test_yolo_deny_rule_sees_through_prefixes_and_substitutions(ws: Path) -> None:
    run = Harness(ws, PermissionEngine(mode="yolo", deny=["bash(rm *)"]))
    for command in [
        "FOO=1 rm made",
        "A='x y' B=2 rm made",
        "echo $(rm made)",
        "echo `rm made`",
        'echo "$(rm made)"',
        "(rm made)",
        "{ rm made; }",
        "if true; then rm made; fi",
        "env rm made",
        "nohup rm made",
        "bash -c 'rm made'",
        "true | xargs rm made",
        "/bin/rm made",
    ]:
        result = await run("bash", command=command)
        assert denied(result) and "deny rule" in result.content, command
    assert (ws / "made").read_text() == "keep me\n"
    assert not denied(await run("bash", command="echo fine"))


async def test_session_approval_of_a_star_command_stays_that_command(ws: Path) -> None:
    approver = ScriptedApprover(ApprovalAnswer.allow_session())
    run = Harness(ws, PermissionEngine(mode="ask", approver=approver))
    (ws / "a.tmp").write_text("t\n")
    assert not denied(await run("bash", command="rm *.tmp"))
    assert approver.requests[0].session_rules == ("bash(rm \\*.tmp)",)
    # Not covered by "rm *.tmp": the approver is asked (and says no).
    assert denied(await run("bash", command="rm -rf src x.tmp"))
    assert len(approver.requests) == 2
    assert (ws / "src" / "app.py").exists()


async def test_session_approval_of_a_top_level_file_is_not_every_file_of_that_name(
    ws: Path,
) -> None:
    approver = ScriptedApprover(ApprovalAnswer.allow_session())
    run = Harness(ws, PermissionEngine(mode="ask", approver=approver))
    assert not (await run("write_file", path="notes.txt", content="n\n")).is_error
    assert approver.requests[0].session_rules == ("edit(/notes.txt)",)
    assert not (await run("write_file", path="notes.txt", content="m\n")).is_error
    assert len(approver.requests) == 1  # the same file is remembered
    assert denied(await run("write_file", path="src/notes.txt", content="x\n"))
    assert len(approver.requests) == 2
    assert not (ws / "src" / "notes.txt").exists()


async def test_approval_request_shows_control_characters_escaped(ws: Path) -> None:
    approver = ScriptedApprover(ApprovalAnswer.deny())
    run = Harness(ws, PermissionEngine(mode="ask", approver=approver))
    await run("bash", command="echo hi \x1b[8m; touch sneaky \u202e")
    subject = approver.requests[0].subject
    assert "\x1b" not in subject and "\u202e" not in subject
    assert "\\x1b[8m" in subject and "touch sneaky" in subject and "\\u202e" in subject


async def test_read_deny_rule_also_refuses_a_grep_over_the_folder_above(ws: Path) -> None:
    run = Harness(ws, PermissionEngine(mode="yolo", deny=["read(src/**)"]))
    for path in [".", "src"]:
        result = await run("grep", pattern="src-secret", path=path)
        assert denied(result) and "src-secret" not in result.content, path
    assert not denied(await run("grep", pattern="guide", path="docs"))
    assert not denied(await run("ls", path="."))
    unanchored = Harness(ws, PermissionEngine(mode="yolo", deny=["read(*.py)"]))
    assert denied(await unanchored("grep", pattern="src-secret"))


async def test_plan_mode_refuses_a_tool_that_does_not_say_it_is_read_only(ws: Path) -> None:
    calls: list[str] = []

    def remote_write(text: str) -> str:
        """An MCP-style tool without readOnlyHint."""
        calls.append(text)
        return "done"

    tool = Tool.from_function(remote_write, name="srv__write", category="mcp")
    run = Harness(ws, PermissionEngine(mode="plan", allow=["srv__write"]), extra=[tool])
    assert denied(await run("srv__write", text="x"))
    assert calls == []


async def test_ask_rule_sees_through_prefixes_like_deny_does(ws: Path) -> None:
    engine = PermissionEngine(mode="ask", allow=["bash(*)"], ask=["bash(rm *)"])
    run = Harness(ws, engine)
    for command in ["FOO=1 rm made", "echo $(rm made)", "sudo rm made"]:
        result = await run("bash", command=command)
        assert denied(result) and "bash(rm *)" in result.content, command
    assert (ws / "made").exists()
