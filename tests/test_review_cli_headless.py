"""Review findings for ``reasonix run``: any task and any answer text make it through."""

from __future__ import annotations

import subprocess
import sys

import pytest

from reasonix.store import SessionStore
from reasonix.testing import Reply
from tests.test_cli_support import Project, json_lines, project

__all__ = ["project"]

ANSWER = "fertig: 中文 ✓ \U0001f600"


@pytest.mark.parametrize("fmt", ["stream-json", "json", "text"])
def test_non_ascii_answer_with_a_non_utf8_stdout(project: Project, fmt: str) -> None:
    # e.g. Windows redirecting to a file (cp1252): printing the answer crashed after the turn.
    project.ex.push(Reply.text(ANSWER))
    env = project.env(PYTHONIOENCODING="cp1252")
    proc = subprocess.run(
        [sys.executable, "-m", "reasonix", "run", "--output-format", fmt, "sag was"],
        cwd=project.root,
        env=env,
        capture_output=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    if fmt == "text":
        assert proc.stdout.decode("cp1252").startswith("fertig: ")
        return
    lines = json_lines(proc.stdout.decode("utf-8"))  # every line valid JSON, in UTF-8
    assert lines[-1]["result"] == ANSWER
    if fmt == "stream-json":
        deltas = "".join(e["text"] for e in lines[:-1] if e["kind"] == "text_delta")
        assert deltas == ANSWER


@pytest.mark.parametrize("how", ["stdin", "argv"])
def test_task_that_is_not_utf8(project: Project, how: str) -> None:
    # A Latin-1 file piped in (or a Latin-1 argument) reached the store as lone surrogates
    # and crashed the run with a traceback.
    project.ex.push(Reply.text("ok"))
    task = "fix the caf\xe9 bug".encode("latin-1")
    args = ["-"] if how == "stdin" else [task]
    proc = subprocess.run(
        [sys.executable.encode(), b"-m", b"reasonix", b"run", b"--output-format", b"json", *args],
        cwd=project.root,
        env=project.env(),
        input=task if how == "stdin" else b"",
        capture_output=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    (result,) = json_lines(proc.stdout.decode())
    assert project.ex.requests[0].messages[-1]["content"] == "fix the caf\ufffd bug"
    with SessionStore(project.data / "sessions.db") as store:
        info = store.get_session(result["session_id"])
    assert info is not None and info.title == "fix the caf\ufffd bug"
