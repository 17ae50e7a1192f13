"""attacker4 B18 (fixed by fix5): the agent made a file un-rewindable by growing it past
``[checkpoints] max_file_mb`` (``head -c 2000000 /dev/zero > notes.md``): its current version is
in no snapshot, so the rewind left it ("restoring would lose it") and gave no way back.

Now each snapshot keeps the stat (size, mtime, ctime, inode) of a file skipped for its size: a
file still exactly as the agent left it at the end of its turn is the agent's, and the rewind
restores over it, saying its replaced version was not kept. Control: when someone changed the
big file after the turn (its stat differs), the rewind leaves it alone and names
``/rewind --force notes.md``, which then puts the user's old version back. Through the real CLI,
one process, ``--input-format stream-json``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from reasonix.testing import Reply
from tests.support.cli import run_cli
from tests.support.stream_json import StreamJsonRun, Work, workspace

pytestmark = pytest.mark.slow

USERS = "the user's notes\n"
GROW = "head -c 2000000 /dev/zero > notes.md"


@pytest.fixture
def work(tmp_path: Path) -> Iterator[Work]:
    with workspace(tmp_path, {"notes.md": USERS}, "\n[checkpoints]\nmax_file_mb = 1\n") as made:
        yield made


def _turn_then(w: Work, *inputs: str, touch: bool = False) -> list[str]:
    """Turn 1 grows notes.md past the limit; after it (``touch``: someone appends to it), the
    ``inputs``. Returns their answers."""
    w.ex.push(Reply.call("bash", {"command": GROW}), Reply.text("grown"))
    with StreamJsonRun(w.root, w.env) as run:
        run.turn("grow the notes")
        if touch:
            with open(w.root / "notes.md", "a") as f:
                f.write("the user's line after the turn\n")
        return run.finish(*inputs)


def test_a_file_the_agent_grew_past_the_limit_is_rewound(work: Work) -> None:
    (answer,) = _turn_then(work, "/rewind")
    assert (work.root / "notes.md").read_text() == USERS, answer
    assert "Restored notes.md" in answer and "is not kept" in answer, answer


def test_control_a_big_file_changed_after_the_turn_is_kept_and_force_puts_it_back(
    work: Work,
) -> None:
    answer, forced = _turn_then(work, "/rewind", "/rewind --force notes.md", touch=True)
    assert "Not restored: notes.md" in answer and "/rewind --force notes.md" in answer, answer
    assert (work.root / "notes.md").read_text() == USERS, forced
    assert "Restored notes.md" in forced, forced


def test_reasonix_rewind_force_puts_back_what_the_rewind_left(work: Work) -> None:
    """The same through ``reasonix rewind`` (a stored session, another process)."""
    work.ex.push(Reply.call("bash", {"command": GROW}), Reply.text("grown"))
    ran = run_cli(["run", "--no-planner", "--mode", "yolo", "grow"], cwd=work.root, env=work.env)
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr
    (work.root / "notes.md").write_bytes(bytes(2_000_000) + b"the user's line\n")
    rewound = run_cli(["rewind"], cwd=work.root, env=work.env)
    assert rewound.returncode == 0, rewound.stderr
    assert "Not restored: notes.md" in rewound.stdout, rewound.stdout
    assert (work.root / "notes.md").stat().st_size > 2_000_000
    forced = run_cli(["rewind", "--force", "notes.md"], cwd=work.root, env=work.env)
    assert forced.returncode == 0, forced.stderr
    assert (work.root / "notes.md").read_text() == USERS, forced.stdout
