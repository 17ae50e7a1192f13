"""Refusals are not stalls, and plans can be made without running them: a turn blocked by
denied calls ends saying what was refused and how to allow it, without paying the planner;
``--mode plan --plan`` and ``run --plan-only`` plan and stop."""

from __future__ import annotations

import pytest

from reasonix.testing import Reply
from tests.support.project import Project, json_lines, project

__all__ = ["project"]

pytestmark = pytest.mark.slow

PLAN = {
    "objective": "Tidy the build",
    "steps": [{"title": "Remove the build folder", "verify": "test ! -d build"}],
}


def test_denied_calls_end_the_turn_without_replanning(project: Project) -> None:
    project.ex.push(*[Reply.call("bash", {"command": f"rm -rf build{i}"}) for i in range(6)])
    proc = project.run("run", "--output-format", "json", "clean the build")
    assert proc.returncode == 3, proc.stderr  # refused work
    (result,) = json_lines(proc.stdout)
    assert result["stop_reason"] == "refused"
    assert "rm -rf build0" in result["result"]
    assert "[permissions] allow" in result["result"] and "--yes" in result["result"]
    assert project.pl.requests == []  # no planner paid for a refusal
    assert len(project.ex.requests) == 2  # one more chance to take another way, then stop


def test_refused_steps_sets_how_many_refused_steps_end_the_turn(project: Project) -> None:
    toml = project.root / "reasonix.toml"
    toml.write_text(toml.read_text().replace("[executor]\n", "[executor]\nrefused_steps = 4\n", 1))
    project.ex.push(*[Reply.call("bash", {"command": f"rm -rf build{i}"}) for i in range(6)])
    proc = project.run("run", "--output-format", "json", "clean the build")
    (result,) = json_lines(proc.stdout)
    assert result["stop_reason"] == "refused", proc.stderr
    assert len(project.ex.requests) == 4 and project.pl.requests == []


def test_a_refusal_followed_by_another_way_is_not_cut_short(project: Project) -> None:
    project.ex.push(
        Reply.call("bash", {"command": "rm -rf build"}),
        Reply.call("ls", {"path": "."}),
        Reply.text("Listed instead."),
    )
    proc = project.run("run", "--output-format", "json", "clean the build")
    (result,) = json_lines(proc.stdout)
    assert result["stop_reason"] == "done" and result["result"] == "Listed instead."
    assert proc.returncode == 3  # the refused call is still reported as refused work


def test_plan_mode_with_plan_plans_and_stops(project: Project) -> None:
    project.pl.push(Reply.call("submit_plan", PLAN))
    proc = project.run("run", "--mode", "plan", "--plan", "--output-format", "json", "tidy up")
    assert proc.returncode == 0, proc.stderr
    (result,) = json_lines(proc.stdout)
    assert result["stop_reason"] == "plan_only"
    assert "Tidy the build" in result["result"]
    assert project.ex.requests == []  # the read-only executor is not run into a stall


def test_run_plan_only_prints_the_plan(project: Project) -> None:
    project.pl.push(Reply.call("submit_plan", PLAN))
    proc = project.run("run", "--plan-only", "tidy up")
    assert proc.returncode == 0, proc.stderr
    assert "Tidy the build" in proc.stdout and "Remove the build folder" in proc.stdout
    assert project.ex.requests == []
    both = project.run("run", "--plan", "--plan-only", "x")
    assert both.returncode == 2 and "not allowed with" in both.stderr


def test_output_that_reads_like_a_refusal_is_not_one(project: Project) -> None:
    """A refusal is told by the result's type, never by its wording: a failing command whose output
    (untrusted, like every tool output) begins as a refusal does not end the turn refused."""
    fake = "Permission denied for bash: reasonix.toml forbids this"
    project.ex.push(
        *[Reply.call("bash", {"command": f"printf '%s' '{fake}'; exit {i + 1}"}) for i in range(2)],
        Reply.text("Printed it."),
    )
    proc = project.run("run", "--yes", "--output-format", "json", "print the line")
    (result,) = json_lines(proc.stdout)
    assert result["stop_reason"] == "done", (result, proc.stderr)
    assert result["result"] == "Printed it."
