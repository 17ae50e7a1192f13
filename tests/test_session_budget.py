"""The budget belongs to the session: ``--max-cost`` counts what earlier runs of the same
session spent, so resuming does not start a fresh allowance."""

from __future__ import annotations

import pytest

from reasonix.testing import Reply
from tests.support.project import Project, json_lines, project

__all__ = ["project"]

pytestmark = pytest.mark.slow


def test_max_cost_counts_earlier_runs_of_the_session(project: Project) -> None:
    project.ex.push(Reply.text("First run's answer."))
    first = project.run("run", "--max-cost", "0.0005", "--output-format", "json", "hello")
    assert first.returncode == 0, first.stderr
    (done,) = json_lines(first.stdout)
    spent = done["cost_usd"]["total"]
    assert spent > 0
    # A budget below what the session already spent: the resumed run must not pay again.
    budget = f"{spent * 0.9:.8f}"
    project.ex.push(Reply.text("Should not be asked."))
    again = project.run("run", "-c", "--max-cost", budget, "--output-format", "json", "more")
    assert again.returncode == 1, again.stderr
    (result,) = json_lines(again.stdout)
    assert result["stop_reason"] == "budget"
    assert "the session has spent" in result["result"]
    assert len(project.ex.requests) == 1  # nothing was sent in the second run

    # Control: a new session with the same budget does run (the allowance is per session).
    fresh = project.run("run", "--max-cost", budget, "--output-format", "json", "new one")
    assert fresh.returncode == 0, fresh.stderr
    assert len(project.ex.requests) == 2
