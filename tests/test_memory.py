from __future__ import annotations

from pathlib import Path

from reasonix.agent import Agent, AgentOptions
from reasonix.agent.memory import (
    find_memory_files,
    load_memory,
    remember,
    remember_tool,
    system_prompt_with_memory,
)
from reasonix.control import Controller, Options
from reasonix.testing import Reply, ScriptedProvider
from reasonix.tools.registry import ToolContext, ToolRegistry


def test_memory_files_load_from_user_ancestors_and_project_in_order(tmp_path: Path) -> None:
    user = tmp_path / "userconf"
    outer = tmp_path / "outer"
    project = outer / "mid" / "project"
    project.mkdir(parents=True)
    user.mkdir()
    (outer / ".git").mkdir()  # the repository root: folders above it are not read
    (tmp_path / "AGENTS.md").write_text("shared parent: not this project's")
    (user / "REASONIX.md").write_text("user prefs")
    (outer / "AGENTS.md").write_text("outer agents file")  # fallback name
    (outer / "mid" / "REASONIX.md").write_text("mid rules")
    (outer / "mid" / "AGENTS.md").write_text("ignored: REASONIX.md wins in the same folder")
    (project / "REASONIX.md").write_text("project rules")
    files = find_memory_files(project, user)
    assert files == [
        user / "REASONIX.md",
        outer / "AGENTS.md",
        outer / "mid" / "REASONIX.md",
        (project / "REASONIX.md").resolve(),
    ]
    block = load_memory(files)
    assert block.index("user prefs") < block.index("outer agents file") < block.index("mid rules")
    assert block.index("mid rules") < block.index("project rules")
    assert "ignored" not in block
    assert "shared parent" not in block
    prompt = system_prompt_with_memory("BASE", block)
    assert prompt.startswith("BASE\n\n# Project memory")
    assert system_prompt_with_memory("BASE", "") == "BASE"


def test_remember_appends_under_a_notes_header(tmp_path: Path) -> None:
    (tmp_path / "REASONIX.md").write_text("# Project\nUse tabs.")
    remember("tests run with   `make check`", tmp_path)
    remember("never touch vendor/", tmp_path)
    text = (tmp_path / "REASONIX.md").read_text()
    assert text == (
        "# Project\nUse tabs.\n\n## Notes remembered by reasonix\n"
        "- tests run with `make check`\n- never touch vendor/\n"
    )


async def test_remember_tool_writes_the_project_file(tmp_path: Path) -> None:
    reg = ToolRegistry([remember_tool()])
    out = await reg.execute("remember", '{"note": "use uv"}', ToolContext(workspace=tmp_path))
    assert not out.is_error
    assert "- use uv" in (tmp_path / "REASONIX.md").read_text()


async def test_remember_mid_session_keeps_system_prompt_bytes(tmp_path: Path) -> None:
    executor = ScriptedProvider([Reply.text("one"), Reply.text("two")])
    ctrl = Controller(
        Options(
            executor_provider=executor,
            planner_provider=ScriptedProvider([]),
            executor_options=AgentOptions(workspace=tmp_path, system_prompt="SYSTEM v1"),
        )
    )
    await ctrl.run_turn("hello there, first question")
    ctrl.remember("the API lives in api/")
    await ctrl.run_turn("second question please")
    first, second = executor.requests
    assert first.messages[0] == second.messages[0]
    assert second.messages[0].content == "SYSTEM v1"  # type: ignore[union-attr]
    assert second.messages[: len(first.messages)] == first.messages[: len(first.messages)]
    tail = second.messages[-1].content  # type: ignore[union-attr]
    assert tail.startswith("second question please")
    assert "[Remembered for this project: the API lives in api/]" in tail
    assert "the API lives in api/" in (tmp_path / "REASONIX.md").read_text()
    # the note rides once, not on every later turn
    agent: Agent = ctrl.executor
    assert agent._tail_notes == []
