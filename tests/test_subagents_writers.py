"""Writer subagents through the real CLI: ``task`` with ``read_only: false`` edits a private copy
of the workspace, its diff comes back to the parent, the user's repository stays untouched
until ``task_apply``, a hook planted in the repository never runs, and in ask mode without an
approver the child's edits are refused like the parent's."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from reasonix.control.delegation import WRITER_PROMPT
from reasonix.testing import Reply
from reasonix.testing.fake_server import RecordedRequest
from tests.support.project import Project, json_lines, project
from tests.support.wire import wire_prefix_violations

__all__ = ["project"]

pytestmark = pytest.mark.slow

OLD = "def greet():\n    return 'hello'\n"
NEW = "def greet():\n    return 'hello, world'\n"


def _git(root: Path, *args: str) -> str:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(root), "GIT_CONFIG_NOSYSTEM": "1"}
    proc = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return proc.stdout


def repo(project: Project) -> Path:
    """The project as a git repository with one commit, a planted fsmonitor and hooks that
    would leave a marker file if any git command of ours ran them."""
    root = project.root
    (root / "greet.py").write_text(OLD)
    (root / "notes.txt").write_text("uncommitted notes\n")  # untracked: the copy has it too
    _git(root, "init", "-q")
    _git(root, "add", "greet.py", "reasonix.toml")
    _git(root, "commit", "-q", "-m", "start")
    marker = root.parent / "planted-ran"
    script = root.parent / "planted.sh"
    script.write_text(f"#!/bin/sh\ntouch {marker}\n")
    script.chmod(0o755)
    _git(root, "config", "core.fsmonitor", str(script))
    for hook in ("post-checkout", "pre-commit", "post-index-change", "reference-transaction"):
        path = root / ".git" / "hooks" / hook
        path.write_text(f"#!/bin/sh\ntouch {marker}\n")
        path.chmod(0o755)
    return marker


def _is_writer(request: RecordedRequest) -> bool:
    messages = request.messages
    return bool(messages) and messages[0].get("content") == WRITER_PROMPT


def handler(apply: bool):  # type: ignore[no-untyped-def]
    def reply(request: RecordedRequest) -> Reply:
        steps = sum(1 for m in request.messages if m.get("role") == "assistant")
        if _is_writer(request):
            script = [
                Reply.call("write_file", {"path": "greet.py", "content": NEW}),
                Reply.call("bash", {"command": "python3 -c 'import greet; print(greet.greet())'"}),
                Reply.text("Changed greet() to say hello, world; checked it prints that."),
            ]
            return script[min(steps, 2)]
        if steps == 0:
            return Reply.call(
                "task",
                {
                    "description": "change the greeting",
                    "prompt": "Make greet() return 'hello, world'.",
                    "read_only": False,
                },
            )
        if steps == 1 and apply:
            return Reply.call("task_apply", {"task_id": "task-1"})
        return Reply.text("The subagent's change is ready.")

    return reply


def test_writer_child_works_in_a_copy_and_its_diff_comes_back(project: Project) -> None:
    marker = repo(project)
    head = _git(project.root, "rev-parse", "HEAD")
    status = _git(project.root, "status", "--porcelain")
    # The control: a plain git command in the repository does run the planted fsmonitor.
    assert marker.exists()
    marker.unlink()
    project.ex.handler = handler(apply=False)
    proc = project.run("run", "--yes", "--no-planner", "--output-format", "json", "greet the world")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (result,) = json_lines(proc.stdout)

    # The user's repository is untouched: files, HEAD, index, no planted hook or fsmonitor ran.
    assert (project.root / "greet.py").read_text() == OLD
    assert not marker.exists()
    assert _git(project.root, "rev-parse", "HEAD") == head
    marker.unlink(missing_ok=True)
    assert _git(project.root, "status", "--porcelain") == status
    assert not list((project.root / ".git").glob("worktrees"))

    # The diff came back to the parent, bounded, with how to apply it.
    parent = [r for r in project.ex.requests if not _is_writer(r)]
    report = next(str(m["content"]) for m in parent[1].messages if m.get("role") == "tool")
    assert "-    return 'hello'" in report and "+    return 'hello, world'" in report
    assert "greet.py | 2 +-" in report
    assert 'call task_apply with task_id "task-1" (through more_tools)' in report
    assert "the workspace is unchanged" in report

    # The child ran in its copy: its bash saw the new file there, and the untracked notes.
    writer = [r for r in project.ex.requests if _is_writer(r)]
    outputs = [str(m["content"]) for m in writer[-1].messages if m.get("role") == "tool"]
    assert any("hello, world" in o for o in outputs)
    assert wire_prefix_violations(writer) == []

    (child,) = result["subagents"]
    assert child["read_only"] is False and child["files_changed"] == 1
    assert child["applied"] is False and child["status"] == "done"
    assert child["cost_usd"] > 0
    assert result["cost_usd"]["subagent"] == child["cost_usd"]
    # An unapplied copy is removed when the session closes.
    assert not any((project.data / "worktrees").glob("*/tree"))


def test_task_apply_brings_the_change_into_the_workspace(project: Project) -> None:
    repo(project)
    project.ex.handler = handler(apply=True)
    proc = project.run("run", "--yes", "--no-planner", "--output-format", "json", "greet the world")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (result,) = json_lines(proc.stdout)
    assert (project.root / "greet.py").read_text() == NEW
    assert (project.root / "notes.txt").read_text() == "uncommitted notes\n"
    (child,) = result["subagents"]
    assert child["applied"] is True
    results = [
        str(m["content"]) for m in project.ex.requests[-1].messages if m.get("role") == "tool"
    ]
    assert any(r.startswith("Applied the changes of task-1 to 1 file(s)") for r in results)

    # The apply was snapshotted like any edit: `reasonix rewind --steps 1` takes it back.
    proc = project.run("rewind", "--steps", "1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (project.root / "greet.py").read_text() == OLD


def test_in_ask_mode_without_an_approver_the_childs_edits_are_refused(project: Project) -> None:
    repo(project)
    project.ex.handler = handler(apply=False)
    proc = project.run("run", "--no-planner", "--output-format", "json", "greet the world")
    (result,) = json_lines(proc.stdout)
    assert proc.returncode == 3, proc.stdout + proc.stderr  # refused work
    assert (project.root / "greet.py").read_text() == OLD
    denied = {d["tool"] for d in result["permission_denials"]}
    assert "write_file" in denied
    (child,) = result["subagents"]
    assert child["files_changed"] == 0
    parent = [r for r in project.ex.requests if not _is_writer(r)]
    report = next(str(m["content"]) for m in parent[1].messages if m.get("role") == "tool")
    assert "It changed no files." in report


def test_writers_off_refuses_read_only_false(project: Project) -> None:
    project.write_toml("\n[subagents]\nwriters = false\n")
    project.ex.handler = handler(apply=False)
    proc = project.run("run", "--yes", "--no-planner", "--output-format", "json", "greet")
    assert proc.returncode == 0, proc.stderr
    tools = {t["function"]["name"] for t in project.ex.requests[0].body["tools"]}
    assert "task_apply" not in tools
    results = [
        str(m["content"]) for m in project.ex.requests[-1].messages if m.get("role") == "tool"
    ]
    assert results[0].startswith("Writer subagents are off ([subagents] writers = false)")
    assert json.loads(proc.stdout)["subagents"] == []


def test_a_workspace_that_is_not_a_repository_works_the_same(project: Project) -> None:
    # The copy lives in our own object store, so the workspace needs no git repository of its
    # own (and gets none).
    (project.root / "greet.py").write_text(OLD)
    project.ex.handler = handler(apply=True)
    proc = project.run("run", "--yes", "--no-planner", "--output-format", "json", "greet")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (result,) = json_lines(proc.stdout)
    assert result["subagents"][0]["applied"] is True
    assert (project.root / "greet.py").read_text() == NEW
    assert not (project.root / ".git").exists()
