"""Sessions of several user turns through the real CLI against the strict fake DeepSeek server
(thinking on, tools in every request, the measured 128-token cache formula): a 5-turn interactive
session (pexpect) and ``reasonix run`` followed by ``reasonix run -c`` twice get no 400, every
request is a byte-exact prefix extension of the previous one of its role, and each role's cache
hits are 100% of the pure-append ideal (printed; run with -s to see them). A session that got a
400 continues on the next turn."""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest

from reasonix.testing import FakeDeepSeekServer, Fault, Reply
from reasonix.testing.fake_server import RecordedRequest
from tests.support.project import Project
from tests.support.wire import wire_prefix_violations

pytestmark = pytest.mark.slow

UNIT = 128


@pytest.fixture
def strict(tmp_path: Path) -> Iterator[Project]:
    root = tmp_path / "proj"
    root.mkdir()
    with (
        FakeDeepSeekServer(cache_formula="measured") as ex,
        FakeDeepSeekServer(cache_formula="measured") as pl,
    ):
        p = Project(root, tmp_path / "data", tmp_path / "cfg", ex, pl)
        p.config_dir.mkdir()
        p.write_toml()
        yield p


def cache_efficiency(requests: list[RecordedRequest]) -> tuple[int, int]:
    """(hits, pure-append ideal) over consecutive requests of one role. The ideal of request n
    is what request n-1 sent and received, in whole units, under the measured formula (the unit
    holding the end of the prompt never counts: at most floor(prompt / 128) - 1 units)."""
    actual = ideal = 0
    for prev, cur in itertools.pairwise(requests):
        assert prev.stored_tokens_after_output is not None and cur.prompt_tokens is not None
        assert cur.cache_hit_tokens is not None
        units = min(prev.stored_tokens_after_output, cur.prompt_tokens) // UNIT
        units = min(units, max(0, cur.prompt_tokens // UNIT - 1))
        actual += cur.cache_hit_tokens
        ideal += units * UNIT
    return actual, ideal


def assert_session_healthy(project: Project, label: str) -> None:
    for role, server in (("executor", project.ex), ("planner", project.pl)):
        requests = server.requests
        assert all(r.status == 200 for r in requests), [(r.status, r.error) for r in requests]
        assert wire_prefix_violations(requests) == [], role
        for r in requests:
            if r.body.get("tools"):
                assert r.thinking  # the rule is in force on every request
        actual, ideal = cache_efficiency(requests)
        if requests[1:]:
            share = actual / ideal if ideal else 1.0
            print(
                f"\n{label}, {role}: {len(requests)} requests, cache hits {actual}/{ideal} "
                f"tokens = {share:.1%} of the pure-append ideal"
            )
            assert actual == ideal


def spawn(project: Project) -> pexpect.spawn:
    env = project.env(PROMPT_TOOLKIT_NO_CPR="1", TERM="xterm-256color", COLUMNS="120")
    return pexpect.spawn(
        sys.executable,
        ["-m", "reasonix"],
        cwd=str(project.root),
        env=env,
        encoding="utf-8",
        timeout=30,
        dimensions=(40, 120),
    )


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty")
def test_five_turn_interactive_session(strict: Project) -> None:
    ex, pl = strict.ex, strict.pl
    ex.push(
        Reply.text("Hello there, how can I help?", reasoning="The user greets me."),
        Reply.call("write_file", {"path": "hello.txt", "content": "hello\n"}),
        Reply.text("Created hello.txt."),  # an answer whose reasoning came back empty
        Reply.call("read_file", {"path": "hello.txt"}, reasoning="Read it for the step."),
        Reply.call("complete_step", {"step": "1", "evidence": "hello.txt says hello"}),
        Reply.text("Checked the notes; nothing else to change."),
        Reply.call("grep", {"pattern": "hello"}, reasoning="Check what it says."),
        Reply.text("It says hello.", reasoning="It contains hello."),
        Reply.call("glob", {"pattern": "*.txt"}),
        Reply.call("complete_step", {"step": "1", "evidence": "hello.txt is still there"}),
        Reply.text("Double-checked: all good.", reasoning="Confirmed."),
    )
    pl.push(
        Reply.call(
            "submit_plan",
            {
                "objective": "Review the notes",
                "steps": [{"title": "Read hello.txt and confirm it greets", "verify": ""}],
            },
            reasoning="One step is enough.",
        ),
        Reply.call(
            "submit_plan",
            {
                "objective": "Check once more",
                "steps": [{"title": "Confirm hello.txt still greets", "verify": ""}],
            },
        ),
    )
    child = spawn(strict)
    try:
        child.expect("›")
        child.sendline("say hello")
        child.expect("how can I help")
        child.expect("›")
        child.sendline("create hello.txt")
        child.expect(r"Allow\?")
        child.sendline("y")
        child.expect("Created hello.txt.")
        child.expect("›")
        child.sendline("/plan review the notes")
        child.expect("nothing else to change")
        child.expect("›")
        child.sendline("what does hello.txt say?")
        child.expect("It says hello.")
        child.expect("›")
        child.sendline("/plan check it once more")
        child.expect("Double-checked")
        child.expect("›")
        child.sendline("/cost")
        child.expect(r"executor\s+\d+")
        child.expect(r"planner\s+\d+")
        child.expect("Balance: 110.00 USD")
        child.expect("›")
        child.sendline("/exit")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0, child.before
    ex.assert_exhausted()
    pl.assert_exhausted()
    assert len(pl.requests) == 2
    assert_session_healthy(strict, "5-turn interactive session")
    last = ex.requests[-1].messages
    answers = [m for m in last if m["role"] == "assistant"]
    assert all(isinstance(m.get("reasoning_content"), str) for m in answers)


def run(project: Project, *args: str) -> str:
    proc = project.run("run", "--yes", *args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_run_then_continue_twice(strict: Project) -> None:
    ex = strict.ex
    (strict.root / "notes.txt").write_text("buy milk\n")
    ex.push(
        Reply.call("read_file", {"path": "notes.txt"}, reasoning="Read the notes."),
        Reply.text("The notes say: buy milk.", reasoning="Report it."),
    )
    assert "buy milk" in run(strict, "what do my notes say?")
    ex.push(
        Reply.call("write_file", {"path": "todo.txt", "content": "milk\n"}),
        Reply.text("Wrote todo.txt."),
    )
    assert "Wrote todo.txt." in run(strict, "-c", "put that in todo.txt")
    ex.push(Reply.text("Nothing else is pending."))
    assert "Nothing else" in run(strict, "-c", "anything else?")
    ex.assert_exhausted()
    assert len(ex.requests) == 5
    assert_session_healthy(strict, "run + run -c + run -c")


def test_a_session_that_got_a_400_continues(strict: Project) -> None:
    ex = strict.ex
    ex.push(Reply.text("First.", reasoning="ok"), Reply.failing(Fault(status=400)))
    run(strict, "one")
    proc = strict.run("run", "--yes", "-c", "two")
    assert proc.returncode != 0
    assert "400" in proc.stdout + proc.stderr
    ex.push(Reply.text("Third works."))
    assert "Third works." in run(strict, "-c", "three")
    assert ex.requests[-1].status == 200
    assert ex.requests[-1].body["tools"]


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty")
def test_the_terminal_withdraws_a_broken_answer_and_shows_the_retry(strict: Project) -> None:
    ex = strict.ex
    whole = Reply.text("The complete answer, streamed again from the start.", reasoning="Go.")
    ex.push(Reply(**{**whole.__dict__, "fault": Fault(cut_in="text")}), whole)
    child = spawn(strict)
    try:
        child.expect("›")
        child.sendline("answer me")
        child.expect("the answer broke off")
        child.expect("retrying")
        child.expect("streamed again from the start")
        child.expect("›")
        child.sendline("/exit")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0
    ex.assert_exhausted()
