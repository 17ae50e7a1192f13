"""``/export [file]`` (``session.history.export``): the transcript as markdown in a new file —
the user's turns, the answers, each tool call and its result — reported by path, and never
written over an existing file (nor through a symlink at the name). Through the façade and
through ``reasonix run``."""

from __future__ import annotations

from pathlib import Path

import pytest

from reasonix.app.commands import answer
from reasonix.store import SessionStore
from reasonix.testing import Reply
from tests.support.project import Project, project
from tests.support.sessions import Servers, open_session

__all__ = ["project"]


async def test_export_writes_the_transcript_and_never_overwrites(
    tmp_path: Path, servers: Servers, store: SessionStore
) -> None:
    ex, _ = servers
    (tmp_path / "hello.txt").write_text("hi there\n")
    ex.push(
        Reply.call("read_file", {"path": "hello.txt"}),
        Reply.text("It says hi.\n```\nnot the end of the block\n```"),
    )
    session = await open_session(tmp_path, servers, store)
    try:
        await session.run_turn("what does hello.txt say?")
        first = await answer(session, "/export", "run")
        default = tmp_path / f"reasonix-{session.session_id}.md"
        written = default.read_text()
        again = await answer(session, "/export", "run")
        named = await answer(session, "/export notes/out.md", "run")
        (tmp_path / "target.md").write_text("precious\n")
        (tmp_path / "link.md").symlink_to(tmp_path / "target.md")
        through_link = await answer(session, "/export link.md", "run")
        # a folder the repository made a symlink out of the workspace
        elsewhere = tmp_path.parent / f"{tmp_path.name}-elsewhere"
        elsewhere.mkdir()
        (tmp_path / "docs").symlink_to(elsewhere)
        out_of_tree = await answer(session, "/export docs/x.md", "run")
        inside = tmp_path / "kept"
        inside.mkdir()
        (tmp_path / "in").symlink_to(inside)
        in_tree = await answer(session, "/export in/x.md", "run")
    finally:
        await session.aclose()
    assert not first.error and first.text == f"Exported the transcript to {default}."
    assert f"# reasonix session {session.session_id}" in written
    assert "### Turn 1: user" in written and "what does hello.txt say?" in written
    assert "Tool call `read_file`" in written and '"path": "hello.txt"' in written
    assert "hi there" in written  # the tool's result, in full
    # the answer's own fence stays inside a longer one
    assert "````\nIt says hi." not in written and "It says hi.\n```\nnot the end" in written
    assert again.error and "exists; nothing was written" in again.text
    assert default.read_text() == written
    # a folder that does not exist is an error that says so, not a traceback
    assert named.error and "cannot create" in named.text
    assert through_link.error and (tmp_path / "target.md").read_text() == "precious\n"
    assert out_of_tree.error and "leads outside the workspace" in out_of_tree.text
    assert not (elsewhere / "x.md").exists()
    # control: a symlink that stays inside the workspace is followed
    assert not in_tree.error and (inside / "x.md").exists()


@pytest.mark.slow
def test_reasonix_run_export_writes_a_file(project: Project) -> None:
    project.ex.push(Reply.text("The answer is 42."))
    assert project.run("run", "what is the answer?").returncode == 0
    proc = project.run("run", "-c", "/export answer.md")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    path = project.root / "answer.md"
    assert f"Exported the transcript to {path}." in proc.stdout
    text = path.read_text()
    assert "what is the answer?" in text and "The answer is 42." in text
    proc = project.run("run", "-c", "/export answer.md")
    assert proc.returncode == 2 and "exists; nothing was written" in proc.stdout + proc.stderr
    assert path.read_text() == text
