"""Auto mode's reviewer across ``/rewind`` and ``/undo``: a verdict is scoped to its request
and, once the turn it was given in is rewound (or the step undone), never reused, even when
the user types the same words and the model makes the same call again; the reviewer is shown
the agent's output after the cut; its verdicts stay listed and its cost stays in its own row.

Through the session façade and the command table, and in the app on a terminal: one process
(the verdict cache lives as long as the session: a second ``reasonix run`` starts with none),
the reviewer on the executor's fake server (no ``[review]`` provider: it shares the executor's
model)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from reasonix.app.commands import answer
from reasonix.safety.permissions import ApprovalAnswer
from reasonix.store import SessionStore
from reasonix.testing import Reply
from tests.support.approvals import ScriptedApprover
from tests.support.interactive import quit_app, spawn
from tests.support.project import Project, project
from tests.support.review import verdict
from tests.support.sessions import Servers, open_session

__all__ = ["project"]

TOUCH = Reply.call("bash", {"command": "touch a"})


def _is_review(messages: list[dict[str, object]]) -> bool:
    return any("You review tool calls" in str(m.get("content", "")) for m in messages)


def _reviews(servers: Servers) -> list[str]:
    """The review texts the reviewer was asked, oldest first."""
    ex, _ = servers
    out = []
    for request in ex.requests:
        if _is_review(request.messages):
            users = [m for m in request.messages if m.get("role") == "user"]
            out.append(str(users[-1]["content"]))
    return out


async def _same_words_again(
    tmp_path: Path, servers: Servers, store: SessionStore, between: str | None
) -> tuple[list[str], list[str], ScriptedApprover, dict[str, int]]:
    """``make a`` (the reviewer allows ``touch a``), then ``between`` (a command, or nothing),
    then ``make a`` again with the same call, where a reviewer that is asked now says ask
    (it is expected to be asked after a command). Returns the review texts, the vias of the
    verdicts, the approver and the requests per role."""
    ex, _ = servers
    approver = ScriptedApprover(ApprovalAnswer.allow_once())
    session = await open_session(
        tmp_path, servers, store, {"permissions.mode": "auto"}, approver=approver
    )
    try:
        ex.push(TOUCH, verdict("allow", "asked for"), Reply.text("made"))
        await session.run_turn("make a")
        assert (tmp_path / "a").exists() and approver.requests == []
        if between is not None:
            said = await answer(session, between, "app")
            assert not said.error, said.text
        asked_again = [verdict("ask", "not sure now")] if between is not None else []
        ex.push(TOUCH, *asked_again, Reply.text("made again"))
        await session.run_turn("make a")
        vias = [r["via"] for r in session.permissions.reviews()]
        requests = {role: cost.requests for role, cost in session.usage.cost().items()}
    finally:
        await session.aclose()
    return _reviews(servers), vias, approver, requests


async def test_after_a_rewind_the_same_words_and_call_are_reviewed_again(
    tmp_path: Path, servers: Servers, store: SessionStore
) -> None:
    reviews, vias, approver, requests = await _same_words_again(tmp_path, servers, store, "/rewind")
    assert len(reviews) == 2 and vias == ["reviewer", "reviewer"]
    # the second verdict was the reviewer's own, and it left the call to the person
    (asked,) = approver.requests
    assert "the reviewer left it to you: not sure now" in asked.reason
    # the request is said again after the cut, and both reviews are in the reviewer's row
    assert "make a" in reviews[1]
    assert requests["reviewer"] == 2


async def test_after_an_undo_the_same_call_is_reviewed_again(
    tmp_path: Path, servers: Servers, store: SessionStore
) -> None:
    reviews, vias, approver, _ = await _same_words_again(tmp_path, servers, store, "/undo")
    assert len(reviews) == 2 and vias == ["reviewer", "reviewer"]
    assert len(approver.requests) == 1


async def test_control_without_a_rewind_the_verdict_serves_the_same_request_again(
    tmp_path: Path, servers: Servers, store: SessionStore
) -> None:
    """The probe sees reuse: the same words in the next turn, nothing rewound, reuse the
    verdict (the documented scope: a verdict serves its request)."""
    reviews, vias, approver, requests = await _same_words_again(tmp_path, servers, store, None)
    assert len(reviews) == 1 and vias == ["reviewer", "earlier"]
    assert approver.requests == []
    assert requests["reviewer"] == 1


async def test_after_a_rewind_the_reviewer_is_shown_the_new_output(
    tmp_path: Path, servers: Servers, store: SessionStore
) -> None:
    """What the agent read after the cut is shown with the next review, even when the
    conversation has grown back past where the reviewer had read before the rewind."""
    ex, _ = servers
    (tmp_path / "x.txt").write_text("ALPHA\n")
    (tmp_path / "y.txt").write_text("BRAVO\n")
    (tmp_path / "z.txt").write_text("CHARLIE\n")
    session = await open_session(
        tmp_path,
        servers,
        store,
        {"permissions.mode": "auto"},
        approver=ScriptedApprover(ApprovalAnswer.allow_once()),
    )
    try:
        ex.push(
            Reply.call("read_file", {"path": "x.txt"}),
            TOUCH,
            verdict("allow", "asked for"),
            Reply.text("made"),
        )
        await session.run_turn("make a")
        said = await answer(session, "/rewind", "app")
        assert not said.error, said.text
        ex.push(
            Reply.call("read_file", {"path": "y.txt"}),
            Reply.call("read_file", {"path": "z.txt"}),
            Reply.call("bash", {"command": "touch b"}),
            verdict("allow", "asked for"),
            Reply.text("made b"),
        )
        await session.run_turn("make b")
    finally:
        await session.aclose()
    first, second = _reviews(servers)
    assert "ALPHA" in first
    assert "BRAVO" in second and "CHARLIE" in second


# -- the app, in a pseudo-terminal ----------------------------------------------------------------


def _reviews_of(project: Project) -> int:
    return sum(1 for r in project.ex.requests if _is_review(r.messages))


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty")
@pytest.mark.parametrize("rewind", [True, False], ids=["rewound", "control-not-rewound"])
def test_in_the_app_a_rewound_turns_verdict_is_not_reused(project: Project, rewind: bool) -> None:
    """``make a`` (the reviewer allows ``touch a``), ``/rewind`` (or, the control, nothing),
    ``make a`` again: after the rewind the reviewer is asked again and, saying ask this time,
    leaves the call to the person; without it the verdict serves the same request again."""
    project.write_user_config('[permissions]\nmode = "auto"\n')
    project.ex.push(TOUCH, verdict("allow", "asked for"), Reply.text("made it"))
    child = spawn(project)
    try:
        child.expect("›")
        child.sendline("make a")
        child.expect("made it")
        child.expect("›")
        if rewind:
            child.sendline("/rewind")
            child.expect("Rewound to before turn 1")
            child.expect("›")
            assert not (project.root / "a").exists()
            project.ex.push(TOUCH, verdict("ask", "not sure now"), Reply.text("made again"))
        else:
            project.ex.push(TOUCH, Reply.text("made again"))
        child.sendline("make a")
        if rewind:
            child.expect(r"Allow\?")
            child.sendline("y")
        child.expect("made again")
        child.expect("›")
        quit_app(child)
    finally:
        child.close(force=True)
    assert _reviews_of(project) == (2 if rewind else 1)
    assert (project.root / "a").exists()
