"""A tool declares its own identity (kind in ACP's vocabulary, Claude Code's names, which
arguments are its subjects, whether it writes files), and the tables that need it are derived:
an editor's icons, hooks' ``tool_name``, agent profiles' tool grants."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from reasonix import web
from reasonix.acp.updates import UpdateMapper
from reasonix.agent import Agent
from reasonix.events import CollectingSink, ToolCallEvent
from reasonix.extensions.agents import AgentProfile, profile_tool_names
from reasonix.extensions.hooks import claude_tool_name
from reasonix.mcp.convert import identity_from_annotations
from reasonix.messages import ToolCall
from reasonix.safety.permissions import call_subject
from reasonix.testing import Reply, ScriptedProvider
from reasonix.tools.builtin import default_tools
from reasonix.tools.registry import Tool, ToolRegistry
from tests.support.tools import every_builtin_tool

#: What every tool reasonix builds declares: (ACP kind, Claude Code names, subject arguments,
#: writes). A tool added without a row here fails the first test; a row is where its identity
#: is decided, never a table in a frontend.
IDENTITIES: dict[str, tuple[str, tuple[str, ...], tuple[str, ...], bool]] = {
    "read_file": ("read", ("Read",), ("path",), False),
    "write_file": ("edit", ("Write",), ("path",), True),
    "edit_file": ("edit", ("Edit",), ("path",), True),
    "multi_edit": ("edit", ("MultiEdit", "Edit"), ("path",), True),
    "delete_file": ("delete", (), ("path",), True),
    "ls": ("read", ("LS",), ("path",), False),
    "glob": ("search", ("Glob",), ("path", "pattern"), False),
    "grep": ("search", ("Grep",), ("path", "pattern"), False),
    "bash": ("execute", ("Bash",), ("command",), False),
    "web_fetch": ("fetch", ("WebFetch",), ("url",), False),
    "web_search": ("fetch", ("WebSearch",), ("query",), False),
    "todo_write": ("think", (), (), False),
    "complete_step": ("think", (), ("step",), False),
    "submit_plan": ("think", (), ("objective",), False),
    "remember": ("think", (), ("note",), False),
    "update_goal": ("think", (), ("status",), False),
    "ask": ("think", ("AskUserQuestion",), (), False),
    "job": ("execute", (), ("id",), False),
    "task": ("think", ("Task",), ("description",), False),
    # judged by its whole arguments: the task id names the child's diff
    "task_apply": ("edit", (), (), True),
    "skill": ("read", ("Skill",), ("name",), False),
    # dispatchers: shown as (and checked as) the tool they run
    "more_tools": ("other", (), (), False),
    "mcp_tools": ("search", (), (), False),
    "mcp_read": ("other", (), (), False),
    "mcp_call": ("other", (), (), False),
}


def test_every_builtin_declares_its_identity(tmp_path: Path) -> None:
    tools = every_builtin_tool(tmp_path)
    assert sorted(t.name for t in tools) == sorted(IDENTITIES)
    for tool in tools:
        assert (tool.kind, tool.aliases, tool.subjects, tool.writes) == IDENTITIES[tool.name], (
            tool.name
        )
        for subject in tool.subjects:
            assert subject in tool.parameters["properties"], (tool.name, subject)
        # a tool that asks no approval changes no file
        assert not (tool.read_only and tool.writes), tool.name


def test_the_derived_tables_read_the_declarations(tmp_path: Path) -> None:
    tools = {t.name: t for t in every_builtin_tool(tmp_path)}
    assert claude_tool_name(tools["bash"]) == "Bash"
    assert claude_tool_name(tools["multi_edit"]) == "MultiEdit"
    assert claude_tool_name(tools["task"]) == "Task"
    assert claude_tool_name(tools["todo_write"]) == "todo_write"
    assert tools["grep"].subject_text({"pattern": "TODO"}) == "TODO"
    assert tools["grep"].subject_text({"pattern": "TODO", "path": "src"}) == "src"
    assert tools["todo_write"].subject_text({"items": []}) == ""


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


def _patcher() -> Tool:
    """A writer no table knows by name, declaring only its fields."""

    def patch_text(target: str, old_string: str, new_string: str) -> str:
        return "patched"

    return Tool.from_function(
        patch_text,
        name="patch_text",
        category="custom",
        kind="edit",
        aliases=("Patcher",),
        subjects=("target",),
        writes=True,
    )


async def test_the_events_carry_the_declared_kind_and_subject(tmp_path: Path) -> None:
    """The agent stamps each call with what its tool declares: the dashboard and the JSON
    output show it from the event, with no table of tool names."""
    sink = CollectingSink()
    patch = {"target": "notes.md", "old_string": "a", "new_string": "b"}
    agent = Agent(
        ScriptedProvider(
            [
                Reply.call("patch_text", patch),
                Reply.text("done"),
            ]
        ),
        ToolRegistry([_patcher()]),
        sink=sink,
    )
    await agent.run("patch it")
    (event,) = sink.of_type(ToolCallEvent)
    assert (event.tool_kind, event.subject) == ("edit", "notes.md")
    assert event.to_dict()["tool_kind"] == "edit"


def test_acp_shows_a_call_by_its_tools_declarations(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("a line\n")
    tool = dataclasses.replace(_patcher(), subjects=("path",))
    mapper = UpdateMapper(tmp_path, 1000, cost=dict, tools={tool.name: tool}.get)
    arguments = json.dumps({"path": "notes.md", "old_string": "a line", "new_string": "b line"})
    call = ToolCall("c1", tool.name, arguments)
    (update,) = mapper.updates(ToolCallEvent("executor", call))
    assert update.kind == "edit"
    assert update.title == "patch_text notes.md"
    (diff,) = update.content
    assert (diff.old_text, diff.new_text) == ("a line\n", "b line\n")
    # the hook's tool_name and a profile's grant read the same declaration
    assert claude_tool_name(tool) == "Patcher"
    profile = AgentProfile("p", "d", "prompt", tmp_path / "p.md", "project", ("Patcher",), "")
    assert profile_tool_names(profile, [tool]) == ["patch_text"]


def test_the_dashboard_keeps_no_table_of_tool_names() -> None:
    """app.js shows a call by the event's ``tool_kind`` and ``subject``; a built-in's name in
    it would be a row of a second table (``ask`` is the one exception: its questions are a
    form of their own, answered by the next message)."""
    script = (Path(web.__file__).parent / "static" / "app.js").read_text()
    named = [n for n in IDENTITIES if n != "ask" and re.search(rf"['\"]{n}['\"]", script)]
    assert named == []


@pytest.mark.parametrize(
    ("annotations", "trusted", "expected"),
    [
        # (read_only, destructive, kind, writes)
        ({}, False, (False, True, "other", True)),  # the spec's defaults: it may destroy
        ({"readOnlyHint": True}, True, (True, False, "read", False)),
        # an untrusted server's read-only claim is shown, never obeyed
        ({"readOnlyHint": True}, False, (False, True, "read", True)),
        ({"readOnlyHint": True, "openWorldHint": True}, True, (True, False, "fetch", False)),
        ({"destructiveHint": False}, False, (False, False, "other", False)),
    ],
)
def test_mcp_tools_get_their_identity_from_their_annotations(
    annotations: dict[str, bool], trusted: bool, expected: tuple[bool, bool, str, bool]
) -> None:
    found = identity_from_annotations(annotations, trusted=trusted)
    assert (found.read_only, found.destructive, found.kind, found.writes) == expected
