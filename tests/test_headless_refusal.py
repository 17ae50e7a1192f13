"""A refusal in ``reasonix run``'s text mode is printed once, with the rule that would allow it,
and never tells a headless user to answer a question nobody asks."""

from __future__ import annotations

import pytest

from reasonix.testing import Reply
from tests.support.project import Project, project

__all__ = ["project"]

pytestmark = pytest.mark.slow


def test_a_refusal_is_printed_once_with_the_rule(project: Project) -> None:
    (project.root / "build").mkdir()
    # The executor tries the same refused call until the refusal rule ends the turn.
    project.ex.push(
        Reply.call("bash", {"command": "rm -rf build"}),
        Reply.call("bash", {"command": "rm -rf build"}),
        Reply.text("Could not."),
    )
    proc = project.run("run", "--no-planner", "clean the build folder")
    assert proc.returncode == 3, proc.stdout + proc.stderr
    both = proc.stdout + proc.stderr
    assert both.count("rm -rf build") == 1, both
    assert "[permissions] allow" in both
    assert "answer 'a'" not in both
    assert (project.root / "build").is_dir()
