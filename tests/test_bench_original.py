"""``python -m bench --only original``: the paired per-step measurement against the original
Reasonix. Our side runs here; the original's only where ``REASONIX_ORIGINAL_BIN`` names its
binary (a skip there is reported as a skip)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from bench import original

from reasonix.testing import FakeDeepSeekServer
from tests.support.bench import run_quick_bench

pytestmark = pytest.mark.slow


def test_the_section_says_it_was_skipped_without_the_binary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(original.BIN_ENV, raising=False)
    stdout, data = run_quick_bench(tmp_path, "original")
    assert f"skipped: set {original.BIN_ENV}" in stdout
    assert data["original"]["skipped"] == original.SKIPPED


def test_our_side_does_every_step_and_is_timed_at_the_server(tmp_path: Path) -> None:
    with FakeDeepSeekServer() as server:
        side = original.ours(tmp_path, server, steps=3)
        per_step = original.run_once(side, server, steps=3)
        assert per_step > 0
        assert sorted(p.name for p in side.root.glob("out*.txt")) == [
            "out0.txt",
            "out1.txt",
            "out2.txt",
        ]
        # one request per step and the final one, nothing more
        assert len(server.requests) == 4


def test_a_run_that_stops_short_is_an_error_not_a_figure(tmp_path: Path) -> None:
    with FakeDeepSeekServer() as server:
        side = original.ours(tmp_path, server, steps=3)
        side.argv = [*side.argv[:-1], "--max-steps", "1", side.argv[-1]]
        with pytest.raises(RuntimeError, match="requests for 3 steps"):
            original.run_once(side, server, steps=3)


def test_the_probe_tells_a_sandboxed_bash_from_an_unconfined_one(tmp_path: Path) -> None:
    with FakeDeepSeekServer() as server:
        assert original.confined(original.ours(tmp_path / "a", server, 1), server)
        # control: the same side with the sandbox switched off is seen as unconfined
        assert not original.confined(original.ours(tmp_path / "b", server, 1, "off"), server)


@pytest.mark.skipif(not os.environ.get(original.BIN_ENV), reason=f"{original.BIN_ENV} is not set")
def test_the_original_runs_the_same_task_in_its_sandbox(tmp_path: Path) -> None:
    binary = os.environ[original.BIN_ENV]
    with FakeDeepSeekServer() as server:
        side = original.original(tmp_path, server, binary, steps=3)
        assert original.confined(side, server)
        assert original.run_once(side, server, steps=3) > 0
