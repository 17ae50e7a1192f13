"""``ask`` and ``/jobs`` in the interactive app, in a pseudo-terminal (pexpect) against fake
servers: the picker takes an option by its number key, several by Space and Enter, and an answer
in the user's own words through "Other"; the answers reach the model as the call's result.
``/jobs`` lists the background jobs, ``/jobs kill`` stops one, and quitting stops the others."""

from __future__ import annotations

import secrets
import sys

import pytest

from reasonix.testing import Reply
from tests.security.support import processes_with_arg, still_running
from tests.support.interactive import quit_app, spawn
from tests.support.project import Project, project
from tests.support.questions import QUESTIONS

__all__ = ["project"]

pytestmark = [
    pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty"),
    pytest.mark.slow,
]


def test_the_picker_takes_options_by_key_and_answers_in_own_words(project: Project) -> None:
    other = {
        "question": "Anything else?",
        "header": "Notes",
        "options": [
            {"label": "Nothing", "description": "no more requirements"},
            {"label": "Later", "description": "ask again later"},
        ],
        "multiSelect": False,
    }
    project.ex.push(
        Reply.call("ask", {"questions": [*QUESTIONS, other]}),
        Reply.text("Understood: Postgres with metrics and tracing."),
    )
    child = spawn(project)
    try:
        child.expect("›")
        child.sendline("set up the service")
        child.expect(r"\[Database\] Which database should the service use\?")
        child.expect("Other")
        child.send("2")  # the number key picks Postgres at once
        child.expect(r"\[Extras\] Which extras do you want\?")
        child.expect("Space or number toggles")
        child.send(" ")  # Metrics, under the cursor
        child.send("\x1b[B")  # down to Tracing
        child.send(" ")
        child.send("\r")
        child.expect(r"\[Notes\] Anything else\?")
        child.expect("Other")
        child.send("3")  # Other: the user's own words
        child.expect("your answer:")
        child.sendline("keep the old port")
        child.expect("Understood: Postgres with metrics and tracing.")
        child.expect("›")
        quit_app(child)
    finally:
        child.close(force=True)
    result = project.ex.requests[1].messages[-1]
    assert result["role"] == "tool"
    assert result["content"] == (
        "The user answered:\n"
        "- Which database should the service use? -> Postgres\n"
        "- Which extras do you want? -> Metrics; Tracing\n"
        "- Anything else? -> (their own words) keep the old port"
    )


def test_escape_dismisses_the_questions_and_the_model_is_told(project: Project) -> None:
    project.ex.push(Reply.call("ask", {"questions": QUESTIONS[:1]}), Reply.text("I'll choose."))
    child = spawn(project)
    try:
        child.expect("›")
        child.sendline("set up the service")
        child.expect("Other")
        child.send("\x1b")
        child.expect("I'll choose.")
        child.expect("›")
        quit_app(child)
    finally:
        child.close(force=True)
    result = project.ex.requests[1].messages[-1]
    assert result["role"] == "tool" and "dismissed the questions" in result["content"]


def test_jobs_lists_kills_and_quitting_stops_the_rest(project: Project) -> None:
    project.write_user_config("[sandbox]\nallow_unconfined = true\n")
    one, two = (f"job-{secrets.token_hex(6)}" for _ in range(2))
    project.ex.push(
        Reply.call("bash", {"command": f"sleep 600 # {one}", "run_in_background": True}),
        Reply.call("bash", {"command": f"sleep 600 # {two}", "run_in_background": True}),
        Reply.text("Both are running."),
    )
    child = spawn(project, "--mode", "yolo")
    try:
        child.expect("›")
        child.sendline("start two jobs")
        child.expect("Both are running.")
        child.expect("›")
        child.sendline("/jobs")
        child.expect(r"job-1\s+running")
        child.expect(r"job-2\s+running")
        child.expect("›")
        assert processes_with_arg(one) and processes_with_arg(two)
        child.sendline("/jobs kill job-1")
        child.expect("Stopped job-1 and its processes.")
        child.expect("›")
        assert still_running(one) == []
        child.sendline("/jobs")
        child.expect(r"job-1\s+killed")
        child.expect("›")
        quit_app(child)
    finally:
        child.close(force=True)
    assert still_running(two) == []


def test_a_question_left_by_a_headless_run_is_shown_and_answered_on_resume(
    project: Project,
) -> None:
    project.ex.push(Reply.call("ask", {"questions": QUESTIONS[:1]}))
    assert project.run("run", "--no-planner", "set up storage").returncode == 4
    project.ex.push(Reply.text("SQLite then."))
    child = spawn(project, "-c")
    try:
        child.expect("The model asked")
        child.expect(r"\[Database\] Which database should the service use\?")
        child.expect("›")
        child.sendline("/compact")
        child.expect("answer it first")
        child.expect("›")
        child.sendline("the small one")
        child.expect("SQLite then.")
        child.expect("›")
        quit_app(child)
    finally:
        child.close(force=True)
    result = project.ex.requests[-1].messages[-1]
    assert result["role"] == "tool" and "the small one" in result["content"]
