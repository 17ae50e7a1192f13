"""``/diff`` (``session.history.diff``): what this session changed in the files, from its
first snapshot to the files now, as a unified diff with a summary line; nothing changed says
so. Through the façade on real files and real git, and through ``reasonix run``."""

from __future__ import annotations

from pathlib import Path

import pytest

from reasonix.app.commands import answer
from reasonix.store import SessionStore
from reasonix.testing import Reply
from tests.support.project import Project, project
from tests.support.sessions import Servers, open_session

__all__ = ["project"]


async def test_diff_shows_what_the_session_changed_since_its_first_step(
    tmp_path: Path, servers: Servers, store: SessionStore
) -> None:
    ex, _ = servers
    (tmp_path / "keep.txt").write_text("alpha\nbeta\n")
    (tmp_path / "gone.txt").write_text("bye\n")
    session = await open_session(tmp_path, servers, store)
    try:
        before = (await answer(session, "/diff", "run")).text
        session.set_mode("yolo")
        ex.push(
            Reply.call("edit_file", {"path": "keep.txt", "old_string": "beta", "new_string": "B"}),
            Reply.call("write_file", {"path": "new.txt", "content": "fresh\n"}),
            Reply.call("delete_file", {"path": "gone.txt"}),
            Reply.text("changed three files"),
        )
        await session.run_turn("change some files")
        after = (await answer(session, "/diff", "run")).text
        session.history.rewind()
        rewound = session.history.diff()
    finally:
        await session.aclose()
    assert before == "No changes: no step of this session has changed files."
    head, _, patch = after.partition("\n\n")
    assert head.startswith("3 files changed") and "since this session's first step" in head
    assert "--- a/keep.txt\n+++ b/keep.txt" in patch and "-beta\n+B" in patch
    assert "+++ b/new.txt" in patch and "+fresh" in patch
    assert "--- a/gone.txt\n+++ /dev/null" in patch and "-bye" in patch
    # the snapshot store is private: the workspace has no .git of ours
    assert not (tmp_path / ".git").exists()
    assert rewound.startswith("No changes")
    assert not any("/diff" in str(r.body["messages"]) for r in ex.requests)


@pytest.mark.slow
def test_reasonix_run_diff_after_a_change(project: Project) -> None:
    (project.root / "app.py").write_text("print('hi')\n")
    project.ex.push(
        Reply.call("edit_file", {"path": "app.py", "old_string": "'hi'", "new_string": "'hello'"}),
        Reply.text("Said hello."),
    )
    done = project.run("run", "--mode", "auto-edit", "say hello instead")
    assert done.returncode == 0, done.stdout + done.stderr
    proc = project.run("run", "-c", "/diff")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 file changed, 1 insertion(+), 1 deletion(-)" in proc.stdout
    assert "-print('hi')\n+print('hello')" in proc.stdout
    fresh = project.run("run", "/diff")  # a new session changed nothing
    assert fresh.returncode == 0 and "No changes" in fresh.stdout, fresh.stdout + fresh.stderr
    assert len(project.ex.requests) == 2  # the commands cost no request
