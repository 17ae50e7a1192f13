"""attacker4: rewind (safety/checkpoints.py) through the real CLI, one process, two inputs
(``--input-format stream-json``): a turn, then ``/rewind``.

A rewind never overwrites a file whose current version is in no snapshot (it could be the
user's). The agent's own background job writes after its turn has ended: the file then differs
from the end-of-turn record, and the rewind keeps the job's bytes, telling the user "not the
agent's work; your version is kept". The job stands in for any delayed write the agent starts
(``sleep 5; ...``); here it waits for a signal file so the order is certain, not timed.
Control: the same write made in the turn itself is rewound (the user's version comes back).

Fixed (fix5): a rewind stops the jobs the rewound turns started first, names a file that
changed while a job ran ("changed while job-1 (started in turn 1) ran") instead of calling it the
user's, and ``/rewind --force PATH`` puts it back.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from reasonix.testing import Reply
from tests.support.stream_json import StreamJsonRun, Work, workspace

pytestmark = pytest.mark.slow

USERS = "print('the user's own work')\n"
DELAYED = "while [ ! -e go ]; do sleep 0.05; done; printf 'EVIL\\n' > app.py; sleep 60"


@pytest.fixture
def work(tmp_path: Path) -> Iterator[Work]:
    with workspace(tmp_path, {"app.py": USERS}) as made:
        yield made


def _wait(condition: object, what: str) -> None:
    deadline = time.monotonic() + 60  # a hang's bound on a loaded machine, not a timing claim
    while not (callable(condition) and condition()):
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def _turn_then_rewind(
    w: Work, first: Reply | list[Reply], *more: str, command: str = "/rewind"
) -> list[str]:
    """Turn 1 makes ``first`` call(s); after the turn ended the signal file appears (a delayed
    job writes then); then ``command`` and the ``more`` inputs. Returns the answers of these."""
    w.ex.push(*(first if isinstance(first, list) else [first]), Reply.text("started"))
    with StreamJsonRun(w.root, w.env) as run:
        run.turn("start the watcher")
        (w.root / "go").write_text("")
        _wait(lambda: "the user" not in (w.root / "app.py").read_text(), "app.py was not written")
        return run.finish(command, *more)


def test_break_a_rewind_undoes_or_names_the_agents_delayed_write(work: Work) -> None:
    job = Reply.call("bash", {"command": DELAYED, "run_in_background": True})
    (answer,) = _turn_then_rewind(work, job)
    restored = (work.root / "app.py").read_text() == USERS
    named = "job-1" in answer and "your version is kept" not in answer
    assert restored or named, answer


def test_the_rewind_stops_the_turns_job_and_force_puts_the_file_back(work: Work) -> None:
    """Fix of B8: the rewound turn's job is stopped before the files are put back, the file it
    changed is named with it, and ``/rewind --force app.py`` puts the user's version back."""
    job = Reply.call("bash", {"command": DELAYED, "run_in_background": True})
    answer, forced = _turn_then_rewind(work, job, "/rewind --force app.py")
    assert "Stopped job-1 (started in turn 1)" in answer, answer
    assert "changed while job-1 (started in turn 1) ran" in answer, answer
    assert "/rewind --force app.py" in answer, answer
    assert (work.root / "app.py").read_text() == USERS, forced
    assert "Restored app.py" in forced, forced


def test_control_the_same_write_in_the_turn_is_rewound(work: Work) -> None:
    write = Reply.call("bash", {"command": "printf 'EVIL\\n' > app.py"})
    (answer,) = _turn_then_rewind(work, write)
    assert (work.root / "app.py").read_text() == USERS, answer


def test_an_undo_stops_the_job_its_steps_started_and_names_what_it_changed(work: Work) -> None:
    """/undo of the steps that started a job stops it too, and a file that changed while it ran
    is not called the user's."""
    write = Reply.call("bash", {"command": "printf 'x\\n' > other.txt"})
    job = Reply.call("bash", {"command": DELAYED, "run_in_background": True})
    (answer,) = _turn_then_rewind(work, [write, job], command="/undo")
    assert "Stopped job-1 (started in turn 1)" in answer, answer
    assert "changed while job-1 (started in turn 1) ran" in answer, answer
    assert "your version is kept" not in answer, answer
    assert not (work.root / "other.txt").exists(), answer
