"""Snapshot cost per step on git repositories of 10,000 and 50,000 files (10,000 only with
``--quick``): the folder's first snapshot (started from the repository's own index, whose
blobs it borrows and copies in the background afterwards; a file written too close to that
index for git's stat to vouch for it is hashed without being stored again; and, for
comparison, with every file hashed into the private store), which a session takes in the
background from its start; what the first step waits for when it comes at once (a file
tool's and a bash step whose every write is known, ``echo x > file``, which keep their files'
bytes and do not wait; then any other bash step's, which waits for what is left of it) and a
bash step after a model's answer; then what a mutating step waits for when nothing changed,
when one file changed and when a hundred did, two ways:

- ``inline``: the step's own snapshot does all the work (how every step worked before);
- ``overlapped``: the files a step changed are hashed right after it, in the background, while
  the (simulated, ``MODEL_S`` seconds) model request runs; the next step's snapshot then only
  checks that nothing else changed.

Then a rewind after files were deleted (everything; a hundred with ``--quick``). The load
average is printed beside each size: the machine may be shared."""

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

SIZES = (10_000, 50_000)
#: the model's answer between two steps, which the background snapshot overlaps
MODEL_S = 1.0


def _repository(root: Path, files: int) -> None:
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
    for d in range(files // per_folder):
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


def _timed(func: Any) -> tuple[float, float]:
    """(wall, CPU) ms of ``func``; CPU is ours and git's (child processes): on a shared
    machine the wall time grows with the load, the CPU time much less."""
    import resource

    def cpu() -> float:
        me = resource.getrusage(resource.RUSAGE_SELF)
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime

    c0, t0 = cpu(), time.perf_counter()
    func()
    return (time.perf_counter() - t0) * 1000, (cpu() - c0) * 1000


def _ms(func: Any) -> float:
    t0 = time.perf_counter()
    func()
    return (time.perf_counter() - t0) * 1000


def _one_size(tmp: Path, size: int, repeats: int, quick: bool, rewind: bool) -> dict[str, Any]:
    from reasonix.safety.checkpoints import CheckpointManager

    ws = tmp / f"repo{size}"
    ws.mkdir()
    _repository(ws, size)
    files = _count(ws)
    calls = iter(range(1_000_000))

    def manager(name: str) -> CheckpointManager:
        return CheckpointManager(ws, data_dir=tmp / f"data-{size}-{name}", session_id="bench")

    def step(m: CheckpointManager) -> None:
        if m.before_step(1, f"c{next(calls)}", "bash", "bench") is None:
            raise RuntimeError(m.last_error or "no snapshot was taken")

    # The first snapshot without the repository's index to start from (an attributes file
    # makes the index unusable as a seed): every file hashed.
    blocker = ws / ".git" / "info" / "attributes"
    blocker.parent.mkdir(exist_ok=True)
    blocker.write_text("")
    load = os.getloadavg()[0]
    unseeded = manager("unseeded")
    first_unseeded = _ms(lambda: step(unseeded))
    blocker.unlink()
    inline = manager("inline")
    first = _ms(lambda: step(inline))
    copy = _ms(inline.wait)  # the borrowed objects copied into the store, in the background
    # A session's start: the first snapshot in the background, and a first step at once: a
    # file tool's and a bash step whose every write is known (which keep their files' bytes
    # and go on), then any other bash step (which waits for what is left of it).
    from reasonix.safety.snapshot_early import exact_writes

    # A session has judged the command (its rules and approval) before the step: the shell
    # model is imported and the line parsed by then.
    exact_writes("echo x > pkg000/mod002.py", ws)
    at_once = manager("at-once")
    at_once.prepare_in_background()
    call = SimpleNamespace(turn=1, call_id="w1")
    first_file = _ms(lambda: at_once.before_write(call, ws / "pkg000" / "mod001.py", "write"))
    known = SimpleNamespace(turn=1, call_id="b1")
    first_known = _ms(lambda: at_once.before_command(known, "echo x > pkg000/mod002.py"))
    first_at_once = _ms(lambda: step(at_once))
    at_once.wait()
    if len(at_once.steps()) != 3:
        raise RuntimeError(at_once.last_error or "the first file or known bash step was lost")
    # The usual start: the first step comes after the user typed and the model answered
    # (MODEL_S), and waits only for what is left of the first snapshot.
    background = manager("overlapped")
    background.prepare_in_background()
    time.sleep(MODEL_S)
    first_wait = _ms(lambda: step(background))
    background.wait()

    def changes(kind: str, i: int) -> None:
        if kind == "one":
            (ws / "pkg000" / "mod000.py").write_text(f"changed {i}\n")
        elif kind == "hundred":
            for f in range(100):
                (ws / "pkg002" / f"mod{f:03}.py").write_text(f"changed {i}\n")

    out: dict[str, Any] = {"files": files, "first_snapshot_ms": round(first, 1)}
    out["first_snapshot_copy_ms"] = round(copy, 1)
    out["first_file_step_at_session_start_ms"] = round(first_file, 1)
    out["first_known_bash_step_at_session_start_ms"] = round(first_known, 1)
    out["first_step_at_session_start_ms"] = round(first_at_once, 1)
    out["first_snapshot_unseeded_ms"] = round(first_unseeded, 1)
    out["first_step_after_background_start_ms"] = round(first_wait, 1)
    for kind in ("unchanged", "one", "hundred"):
        plain, cpu = [], []
        for i in range(repeats):
            changes(kind, i)
            wall, used = _timed(lambda: step(inline))
            plain.append(wall)
            cpu.append(used)
        overlapped = []
        for i in range(repeats):
            changes(kind, 1000 + i)  # what the previous step did
            background.after_step()  # its result is out: hash it while the model answers
            time.sleep(MODEL_S)
            overlapped.append(_ms(lambda: step(background)))
        out[f"{kind}_inline_ms"] = round(statistics.median(plain), 1)
        out[f"{kind}_inline_cpu_ms"] = round(statistics.median(cpu), 1)
        out[f"{kind}_overlapped_ms"] = round(statistics.median(overlapped), 1)
    background.wait()
    if rewind:
        before_rm = len(inline.steps())
        step(inline)
        # Creating files is what a rewind of a big deletion costs (the file system's own
        # time); the quick run deletes one folder of a hundred.
        doomed = [ws / "pkg004"] if quick else [ws / e for e in os.listdir(ws) if e != ".git"]
        for path in doomed:
            shutil.rmtree(path) if path.is_dir() else path.unlink()
        # The agent's turn did the deleting: recorded as its own (a change after the last
        # record counts as someone else's, and a rewind leaves that alone).
        inline.after_turn(1)
        out["files_deleted"] = files - _count(ws)
        out["rewind_after_deleting_ms"] = round(
            _ms(lambda: inline.undo(len(inline.steps()) - before_rm)), 1
        )
        out["files_restored"] = _count(ws)
    out["store_mb"] = round(inline.store_size() / 1024 / 1024, 1)
    out["load_1m"] = round(max(load, os.getloadavg()[0]), 2)
    return out


def run_snapshots(quick: bool) -> dict[str, Any]:
    repeats = 3 if quick else 9
    sizes = SIZES[:1] if quick else SIZES
    tmp = Path(tempfile.mkdtemp(prefix="reasonix-bench-snap-"))
    results: dict[str, Any] = {"repeats": repeats, "model_s": MODEL_S}
    try:
        for size in sizes:
            results[str(size)] = _one_size(tmp, size, repeats, quick, rewind=size == sizes[0])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    rows, cpu_rows = [], []
    for size in sizes:
        r = results[str(size)]
        kinds = ("unchanged", "one", "hundred")
        cpu_rows.append([r["files"], *(f"{r[f'{k}_inline_cpu_ms']:.0f} ms" for k in kinds)])
        rows.append(
            [
                r["files"],
                r["load_1m"],
                f"{r['first_snapshot_ms']:.0f} (+{r['first_snapshot_copy_ms']:.0f} copy) / "
                f"{r['first_snapshot_unseeded_ms']:.0f} ms",
                f"{r['first_file_step_at_session_start_ms']:.0f} / "
                f"{r['first_known_bash_step_at_session_start_ms']:.0f} / "
                f"{r['first_step_at_session_start_ms']:.0f} / "
                f"{r['first_step_after_background_start_ms']:.0f} ms",
                *(
                    f"{r[f'{k}_inline_ms']:.0f} / {r[f'{k}_overlapped_ms']:.0f} ms"
                    for k in ("unchanged", "one", "hundred")
                ),
            ]
        )
    print_table(
        f"Snapshots: what a mutating step waits for (median of {repeats}; inline / overlapped "
        f"with a {MODEL_S:g} s model request)",
        rows,
        [
            "files",
            "load",
            "first snapshot (from git's index + its copy after / not)",
            f"first step (file tool / known bash write / other bash at once; bash after "
            f"{MODEL_S:g} s)",
            "unchanged",
            "1 changed",
            "100 changed",
        ],
    )
    print_table(
        "Snapshots: CPU of a step's own snapshot, reasonix and git (median, inline)",
        cpu_rows,
        ["files", "unchanged", "1 changed", "100 changed"],
    )
    first = results[str(sizes[0])]
    if "rewind_after_deleting_ms" in first:
        print(
            f"  rewind after deleting {first['files_deleted']} files: "
            f"{first['rewind_after_deleting_ms']:.0f} ms ({first['files_restored']} restored); "
            f"store {first['store_mb']} MB"
        )
    return results
