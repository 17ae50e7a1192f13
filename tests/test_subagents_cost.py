"""``/cost`` in the interactive app shows the ``subagent`` role and a line per child (its
status, requests, cache share, cost and description, and for a writer that it is one)."""

from __future__ import annotations

import sys

import pexpect
import pytest

from reasonix.control.delegation import SUBAGENT_PROMPT, WRITER_PROMPT
from reasonix.testing import Reply
from reasonix.testing.fake_server import RecordedRequest
from tests.support.interactive import spawn
from tests.support.project import Project, project

__all__ = ["project"]

pytestmark = [
    pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty"),
    pytest.mark.slow,
]


def handler(request: RecordedRequest) -> Reply:
    system = request.messages[0].get("content")
    steps = sum(1 for m in request.messages if m.get("role") == "assistant")
    if system == SUBAGENT_PROMPT:
        return Reply.text("The entry point is main.py.")
    if system == WRITER_PROMPT:
        return Reply.text("Nothing needed changing.")
    if steps == 0:
        return Reply.calls(
            ("task", {"description": "find the entry point", "prompt": "Find it."}),
            ("task", {"description": "tidy up", "prompt": "Tidy.", "read_only": False}),
        )
    return Reply.text("Surveyed the project.")


def test_cost_lists_each_child_under_the_subagent_role(project: Project) -> None:
    project.ex.handler = handler
    child = spawn(project, "--no-planner")
    try:
        child.expect("›")
        child.sendline("survey the project")
        child.expect("Surveyed the project.")
        child.expect("›")
        child.sendline("/cost")
        child.expect(r"executor\s+\d+")
        child.expect(r"subagent\s+2\s")
        child.expect(r"task-1\s+done\s+1 reqs .* hit\s+\$\d+\.\d{6}\s+find the entry point")
        child.expect(r"task-2\s+done\s+1 reqs .*tidy up \(writer\)")
        child.expect("›")
        child.sendline("/exit")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
