"""The honest cost of an interrupted or broken request, through the real CLI: an answer cut off
by Esc, or by a stream that broke before its usage arrived, still costs what streamed; the
count is labelled an estimate in ``/cost`` and in the JSON result."""

from __future__ import annotations

import sys

import pytest

from reasonix.testing import Fault, Reply
from tests.support.project import Project, json_lines, project

__all__ = ["project"]

pytestmark = pytest.mark.slow

ANSWER = "This is a long answer that streams for a while before anything goes wrong.\n" * 20


def test_an_interrupted_answer_appears_in_cost(project: Project) -> None:
    import pexpect

    project.ex.push(
        Reply(content=ANSWER, fault=Fault(stall_in="text", stall_seconds=60, at=0.5)),
    )
    env = {**project.env(), "PROMPT_TOOLKIT_NO_CPR": "1", "TERM": "xterm-256color"}
    child = pexpect.spawn(
        sys.executable,
        ["-m", "reasonix", "--no-planner"],
        cwd=str(project.root),
        env=env,
        encoding="utf-8",
        timeout=30,
        dimensions=(40, 160),
    )
    try:
        child.expect("›")
        child.sendline("explain it")
        child.expect("goes wrong")  # part of the answer has streamed
        child.send("\x1b")  # Esc interrupts
        child.expect("Interrupted")
        child.expect("›")
        child.sendline("/cost")
        child.expect(r"executor\s+1\s+\d+")
        child.expect("includes an estimate for 1 interrupted or broken request")
        child.expect("›")
        child.sendline("/exit")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)


def test_a_broken_stream_without_usage_is_counted_as_an_estimate(project: Project) -> None:
    whole = Reply.text(ANSWER)
    project.ex.push(Reply(content=ANSWER, fault=Fault(cut_in="text")), whole)
    proc = project.run("run", "--no-planner", "--output-format", "json", "explain it")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (result,) = json_lines(proc.stdout)
    executor = result["usage"]["executor"]
    # Both attempts are counted: the one that broke (an estimate) and the one that finished.
    assert executor["requests"] == 2, executor
    assert executor.get("estimated_requests") == 1, executor
    finished = project.ex.requests[-1].usage
    assert finished is not None
    assert executor["completion_tokens"] > finished.completion_tokens, executor
