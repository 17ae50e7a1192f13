"""A tool declares its own identity (kind in ACP's vocabulary, Claude Code's names, which
arguments are its subjects, whether it writes files), and the tables that need it are derived:
an editor's icons, hooks' ``tool_name``, agent profiles' tool grants."""

from __future__ import annotations

from pathlib import Path

import pytest

from reasonix.agent.memory import remember_tool
from reasonix.control.plan import submit_plan_tool
from reasonix.control.todo_tools import executor_plan_tools
from reasonix.extensions.agents import AgentProfile, profile_tool_names
from reasonix.extensions.hooks import claude_tool_name
from reasonix.safety.permissions import call_subject
from reasonix.tools.builtin import default_tools
from reasonix.tools.registry import Tool


def builtins(tmp_path: Path) -> list[Tool]:
    return [*default_tools(tmp_path), *executor_plan_tools(), submit_plan_tool(), remember_tool()]


def test_every_builtin_declares_its_identity(tmp_path: Path) -> None:
    for tool in builtins(tmp_path):
        assert tool.kind != "other", f"{tool.name} declares no kind"
        for subject in tool.subjects:
            assert subject in tool.parameters["properties"], (tool.name, subject)
        if tool.category == "edit":
            assert tool.writes and tool.subjects == ("path",), tool.name
        else:
            assert not tool.writes, tool.name


def test_the_derived_tables_say_what_the_old_ones_said(tmp_path: Path) -> None:
    tools = {t.name: t for t in builtins(tmp_path)}
    kinds = {name: t.kind for name, t in tools.items()}
    assert kinds == {
        "read_file": "read",
        "write_file": "edit",
        "edit_file": "edit",
        "multi_edit": "edit",
        "delete_file": "delete",
        "ls": "read",
        "glob": "search",
        "grep": "search",
        "bash": "execute",
        "web_fetch": "fetch",
        "todo_write": "think",
        "complete_step": "think",
        "submit_plan": "think",
        "remember": "think",
    }
    hook_names = {name: claude_tool_name(t) for name, t in tools.items() if t.aliases}
    assert hook_names == {
        "bash": "Bash",
        "read_file": "Read",
        "write_file": "Write",
        "edit_file": "Edit",
        "multi_edit": "MultiEdit",
        "glob": "Glob",
        "grep": "Grep",
        "ls": "LS",
        "web_fetch": "WebFetch",
    }
    assert claude_tool_name(tools["todo_write"]) == "todo_write"
    subjects = {name: t.subjects for name, t in tools.items() if t.subjects}
    assert subjects["bash"] == ("command",) and subjects["web_fetch"] == ("url",)


@pytest.mark.parametrize(
    ("granted", "expected"),
    [
        (("Read", "Grep"), ["read_file", "grep"]),
        # Claude Code's Edit covers MultiEdit; MultiEdit alone is just that
        (("Edit",), ["edit_file", "multi_edit"]),
        (("MultiEdit",), ["multi_edit"]),
        (("Bash(git status:*)", "WebFetch"), ["bash", "web_fetch"]),
        # our own names work as well, and unknown ones are ignored
        (("write_file", "NoSuchTool"), ["write_file"]),
    ],
)
def test_profiles_grant_tools_by_their_aliases(
    tmp_path: Path, granted: tuple[str, ...], expected: list[str]
) -> None:
    profile = AgentProfile("p", "d", "prompt", tmp_path / "p.md", "project", granted, "")
    assert profile_tool_names(profile, default_tools(tmp_path)) == expected


def _declared(**fields: object) -> Tool:
    """A tool of no known name or category: only its identity fields say what it is."""

    def act(path: str = ".", command: str = "", url: str = "", note: str = "") -> str:
        return "done"

    return Tool.from_function(act, name="custom_tool", category="custom", **fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("fields", "arguments", "kind", "values"),
    [
        (
            {"subjects": ("command",)},
            {"command": "git status && ls"},
            "command",
            ("git status", "ls"),
        ),
        ({"subjects": ("path",), "writes": True}, {"path": "src/a.py"}, "path", ("src/a.py",)),
        # a reader that leaves its folder out reads the workspace
        ({"subjects": ("path",), "read_only": True}, {}, "path", (".",)),
        (
            {"subjects": ("url",)},
            {"url": "https://example.com/x"},
            "args",
            ("https://example.com/x",),
        ),
        # the first declared subject the call gives
        ({"subjects": ("url", "path")}, {"path": "b.txt"}, "path", ("b.txt",)),
        # no declared subject: judged by all its arguments
        ({}, {"command": "rm -rf /"}, "args", ('{"command":"rm -rf /"}',)),
    ],
)
def test_permission_subjects_come_from_the_declared_arguments(
    tmp_path: Path,
    fields: dict[str, object],
    arguments: dict[str, object],
    kind: str,
    values: tuple[str, ...],
) -> None:
    subject = call_subject(_declared(**fields), arguments, tmp_path)
    assert (subject.kind, subject.values) == (kind, values)


def test_a_declared_writer_of_a_protected_path_is_flagged(tmp_path: Path) -> None:
    writer = call_subject(
        _declared(subjects=("path",), writes=True), {"path": ".git/hooks/x"}, tmp_path
    )
    reader = call_subject(
        _declared(subjects=("path",), read_only=True), {"path": ".git/hooks/x"}, tmp_path
    )
    assert writer.protected is not None and reader.protected is None
