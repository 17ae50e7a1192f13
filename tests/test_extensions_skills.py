"""Skills in Claude Code's ``SKILL.md`` format: where they are found (project folders only when
trusted), validation (the name equals the folder's), the ``skill`` tool that loads a body or a
file of the skill, and, through the real terminal app over several turns, that the index lives in
the session-constant tool schemas so the prefix cache holds (cache figures from the fake server),
while a skill added mid-session waits for the next session; ``/skills``, ``/help`` and Tab
completion show the extensions and a custom command runs."""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

import pexpect
import pytest

from reasonix.extensions.skills import SkillTool, load_skills, skill_folders, skill_tool
from reasonix.testing import Reply
from tests.support.project import Project, project
from tests.support.wire import wire_prefix_violations

__all__ = ["project"]


def _skill(root: Path, folder: str, front: str, body: str = "Do the thing.\n") -> Path:
    path = root / folder / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\n{front}\n---\n{body}")
    return path.parent


def test_skills_are_found_validated_and_ordered(tmp_path: Path) -> None:
    ws, user = tmp_path / "ws", tmp_path / "cfg"
    _skill(ws / ".reasonix/skills", "deploy", "name: deploy\ndescription: Ship a release")
    _skill(ws / ".claude/skills", "deploy", "name: deploy\ndescription: shadowed")
    _skill(
        ws / ".agents/skills", "pdf-forms", "name: pdf-forms\ndescription: >\n  Fill PDF\n  forms"
    )
    _skill(ws / ".claude/skills", "wrong", "name: other\ndescription: mismatched name")
    _skill(ws / ".claude/skills", "bare", "name: bare")
    _skill(
        user / "skills", "notes", "name: notes\ndescription: My notes\nallowed-tools: Read, Grep"
    )
    problems: list[str] = []
    found = load_skills(skill_folders(ws, user, trusted=True), problems=problems)
    assert list(found) == ["deploy", "notes", "pdf-forms"]
    assert found["deploy"].description == "Ship a release"
    assert found["deploy"].source == "project"
    assert found["pdf-forms"].description == "Fill PDF forms"
    assert found["notes"].allowed_tools == ("Read", "Grep")
    assert any("'other'" in p and "folder name 'wrong'" in p for p in problems)
    assert any("bare" in p and "no description" in p for p in problems)
    assert list(load_skills(skill_folders(ws, user, trusted=False))) == ["notes"]
    assert skill_tool({}) is None


async def test_the_skill_tool_loads_bodies_and_files(tmp_path: Path) -> None:
    folder = _skill(
        tmp_path / "skills",
        "deploy",
        "name: deploy\ndescription: Ship a release\nallowed-tools: Bash(make:*)",
        "# Deploy\nRun `make release`, then read checklist.md.\n",
    )
    (folder / "checklist.md").write_text("1. tag\n2. push\n")
    (tmp_path / "secret.txt").write_text("not for the model")
    tool = SkillTool(load_skills([(tmp_path / "skills", "user")]))
    assert tool.tool().read_only
    assert "- deploy: Ship a release" in tool.description()
    body = await tool.skill("deploy")
    assert body.content.startswith("# Skill: deploy\n\n# Deploy\nRun `make release`")
    assert "Tools this skill expects: Bash(make:*)" in body.content
    assert "checklist.md" in body.content and "---" not in body.content
    assert (await tool.skill("deploy", "checklist.md")).content == "1. tag\n2. push\n"
    outside = await tool.skill("deploy", "../../secret.txt")
    assert outside.is_error and "outside" in outside.content
    unknown = await tool.skill("nope")
    assert unknown.is_error and "deploy" in unknown.content


def _spawn(project: Project) -> pexpect.spawn:
    env = project.env(PROMPT_TOOLKIT_NO_CPR="1", TERM="xterm-256color", COLUMNS="120")
    return pexpect.spawn(
        sys.executable,
        ["-m", "reasonix", "--no-planner"],
        cwd=str(project.root),
        env=env,
        encoding="utf-8",
        timeout=30,
        dimensions=(40, 120),
    )


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty")
def test_skills_and_commands_in_the_terminal_app_keep_the_prefix(project: Project) -> None:
    skills = project.config_dir / "skills"
    _skill(skills, "deploy", "name: deploy\ndescription: Ship a release", "Run make release.\n")
    commands = project.config_dir / "commands"
    (commands / "git").mkdir(parents=True)
    (commands / "git" / "summary.md").write_text(
        "---\ndescription: Summarise the work\nargument-hint: <topic>\n---\nSummarise $ARGUMENTS."
    )
    ex = project.ex
    ex.push(
        Reply.call("skill", {"name": "deploy"}),
        Reply.text("Following the deploy skill."),
        Reply.text("Second turn answer."),
        Reply.text("Summary done."),
    )
    child = _spawn(project)
    try:
        child.expect("›")
        child.sendline("/skills")
        child.expect("deploy")
        child.expect("Ship a release")
        child.expect("›")
        child.sendline("/help")
        child.expect("Custom commands:")
        child.expect(r"/git:summary <topic>\s+Summarise the work \(user\)")
        child.expect("›")
        child.sendline("release it")
        child.expect("Following the deploy skill.")
        child.expect("›")
        # A skill added now does not change this session's tools (or its prefix).
        _skill(skills, "late", "name: late\ndescription: Added mid-session")
        child.sendline("and again")
        child.expect("Second turn answer.")
        child.expect("›")
        child.send("/git:su")
        child.send("\t")
        child.expect("mmary")  # Tab completed the rest of the name
        child.sendline(" the release")
        child.expect("Summary done.")
        child.expect("›")
        child.sendline("/exit")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    ex.assert_exhausted()
    reqs = [r for r in ex.requests if r.status == 200]
    assert len(reqs) == 4
    assert reqs[1].messages[-1]["content"].startswith("# Skill: deploy\n\nRun make release.")
    assert reqs[3].messages[-1]["content"] == "Summarise the release."
    # The index is in the skill tool's description, identical on every request, never in the
    # system prompt; the skill added mid-session is not in it.
    tool_sets = {json.dumps(r.body["tools"], sort_keys=True) for r in reqs}
    assert len(tool_sets) == 1
    (skill_schema,) = [t for t in reqs[0].body["tools"] if t["function"]["name"] == "skill"]
    assert "- deploy: Ship a release" in skill_schema["function"]["description"]
    assert "late" not in tool_sets.pop()
    assert all("Ship a release" not in r.messages[0]["content"] for r in reqs)
    assert wire_prefix_violations(reqs) == []
    # Cache figures: every request hits all that the previous one stored (unit-rounded).
    unit = ex.unit_tokens
    actual = ideal = 0
    for prev, cur in itertools.pairwise(reqs):
        assert cur.usage is not None and prev.stored_tokens_after_output is not None
        assert cur.prompt_tokens is not None
        expected = min(prev.stored_tokens_after_output, cur.prompt_tokens) // unit * unit
        assert cur.usage.cache_hit_tokens == expected
        actual += cur.usage.cache_hit_tokens
        ideal += expected
    assert actual == ideal > 0
    print(f"\nskills session: cache hits {actual}/{ideal} of the pure-append ideal")
    # Control: a new session reads the added skill, so its tools (and prefix) differ.
    ex.push(Reply.text("fresh"))
    proc = project.run("run", "--no-planner", "hello")
    assert proc.returncode == 0, proc.stderr
    assert "- late: Added mid-session" in json.dumps(ex.requests[-1].body["tools"])
    assert ex.requests[-1].usage is not None
    assert ex.requests[-1].usage.cache_hit_tokens < reqs[0].prompt_tokens
