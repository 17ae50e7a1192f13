"""Snapshot cost per step on a 10,000-file git repository: the first snapshot of a folder
(every file hashed into the private store), then the per-step cost when nothing changed, when
one file changed and when a hundred did, and a rewind after files were deleted (everything;
a hundred with ``--quick``)."""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from bench.common import print_table

FILES = 10_000


def _repository(root: Path) -> None:
    env = {
        **os.environ,
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "bench",
        "GIT_AUTHOR_EMAIL": "bench@localhost",
        "GIT_COMMITTER_NAME": "bench",
        "GIT_COMMITTER_EMAIL": "bench@localhost",
    }
    per_folder = 100
    for d in range(FILES // per_folder):
        folder = root / f"pkg{d:03}" / ("sub" if d % 2 else "")
        folder.mkdir(parents=True, exist_ok=True)
        for f in range(per_folder):
            (folder / f"mod{f:03}.py").write_text(f"# module {d}.{f}\n" + "x = 1\n" * 40)
    (root / ".gitignore").write_text("*.log\n")
    subprocess.run(["git", "init", "-q"], cwd=root, env=env, check=True)
    subprocess.run(["git", "add", "-A"], cwd=root, env=env, check=True)
    subprocess.run(["git", "commit", "-qm", "bench"], cwd=root, env=env, check=True)
    for i in range(50):  # untracked and ignored files too
        (root / f"notes{i}.txt").write_text("untracked\n")
        (root / f"run{i}.log").write_text("ignored\n")


def _count(root: Path) -> int:
    total = 0
    for _folder, dirs, files in os.walk(root):
        if ".git" in dirs:
            dirs.remove(".git")
        total += len(files)
    return total


def _ms(func: Any) -> float:
    t0 = time.perf_counter()
    func()
    return (time.perf_counter() - t0) * 1000


def run_snapshots(quick: bool) -> dict[str, Any]:
    from reasonix.safety.checkpoints import CheckpointManager

    repeats = 3 if quick else 20
    tmp = Path(tempfile.mkdtemp(prefix="reasonix-bench-snap-"))
    try:
        ws = tmp / "repo"
        ws.mkdir()
        _repository(ws)
        files = _count(ws)
        manager = CheckpointManager(ws, data_dir=tmp / "data", session_id="bench")
        calls = iter(range(1_000_000))

        def step() -> None:
            ctx = SimpleNamespace(turn=1, call_id=f"c{next(calls)}")
            if manager.before_step(ctx.turn, ctx.call_id, "bash", "bench") is None:
                raise RuntimeError(manager.last_error or "no snapshot was taken")

        first = _ms(step)
        unchanged = [_ms(step) for _ in range(repeats)]
        one: list[float] = []
        for i in range(repeats):
            (ws / "pkg000" / "mod000.py").write_text(f"changed {i}\n")
            one.append(_ms(step))
        hundred: list[float] = []
        for i in range(repeats):
            for f in range(100):
                (ws / "pkg002" / f"mod{f:03}.py").write_text(f"changed {i}\n")
            hundred.append(_ms(step))
        before_rm = len(manager.steps())
        step()
        # Creating files is what a rewind of a big deletion costs (the file system's own
        # time); the quick run deletes one folder of a hundred.
        doomed = [ws / "pkg004"] if quick else [ws / e for e in os.listdir(ws) if e != ".git"]
        for path in doomed:
            shutil.rmtree(path) if path.is_dir() else path.unlink()
        deleted = files - _count(ws)
        rewind_ms = _ms(lambda: manager.undo(len(manager.steps()) - before_rm))
        restored = _count(ws)
        store_mb = manager.store_size() / 1024 / 1024
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    out = {
        "files": files,
        "first_snapshot_ms": round(first, 1),
        "per_step_unchanged_ms": round(statistics.median(unchanged), 1),
        "per_step_one_file_changed_ms": round(statistics.median(one), 1),
        "per_step_hundred_files_changed_ms": round(statistics.median(hundred), 1),
        "files_deleted": deleted,
        "rewind_after_deleting_ms": round(rewind_ms, 1),
        "files_restored": restored,
        "store_mb": round(store_mb, 1),
        "repeats": repeats,
    }
    print_table(
        f"Snapshots: cost per step on a {files}-file git repository (median of {repeats})",
        [
            [
                f"{out['first_snapshot_ms']} ms",
                f"{out['per_step_unchanged_ms']} ms",
                f"{out['per_step_one_file_changed_ms']} ms",
                f"{out['per_step_hundred_files_changed_ms']} ms",
                f"{out['rewind_after_deleting_ms']} ms ({deleted} files)",
                f"{out['store_mb']} MB",
            ]
        ],
        ["first", "unchanged", "1 changed", "100 changed", "rewind of rm", "store"],
    )
    return out
