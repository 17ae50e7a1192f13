"""``reasonix batch``: the real command as a subprocess, on the local engine and on a real local
Ray instance, against one fake model server that answers each task from its own script."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from reasonix.testing import FakeDeepSeekServer, Fault, Reply
from reasonix.testing.fake_server import RecordedRequest
from reasonix.testing.project import fake_project_toml
from tests.support.cli import FAKE_KEY_ENV, cli_env, run_cli

pytestmark = pytest.mark.slow

KEY_ENV = FAKE_KEY_ENV
TASK_ID = re.compile(r"^\[([A-Za-z0-9._-]+)\]")


def _first_user_text(request: RecordedRequest) -> str:
    for message in request.messages:
        if message.get("role") == "user":
            return str(message.get("content", ""))
    return ""


def scripted(latency: float = 0.0) -> Any:
    """A handler answering each task by the ``[id]`` its text starts with: tasks named
    ``ok-*`` and ``die-*`` write done.txt and finish, ``lazy-*`` answer without doing it,
    ``broken-*`` get a 400. ``latency`` delays the first byte of every answer."""

    def handler(request: RecordedRequest) -> Reply:
        match = TASK_ID.match(_first_user_text(request))
        task = match.group(1) if match else "?"
        step = sum(1 for m in request.messages if m.get("role") == "assistant")
        fault = Fault(stall_seconds=latency, stall_after_bytes=0) if latency else None
        if task.startswith("broken"):
            return Reply.failing(Fault(status=400, message="a request this task cannot make"))
        if task.startswith(("ok", "die")) and step == 0:
            reply = Reply.call("write_file", {"path": "done.txt", "content": f"{task}\n"})
        else:
            reply = Reply.text(f"{task}: finished.")
        return Reply(
            content=reply.content, tool_calls=reply.tool_calls, reasoning="Working.", fault=fault
        )

    return handler


@dataclass
class Batch:
    root: Path
    server: FakeDeepSeekServer
    config_dir: Path
    data_dir: Path

    def env(self, **extra: str) -> dict[str, str]:
        ray = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}
        return cli_env(self.data_dir, self.config_dir, drop=("RAY_",), **{**ray, **extra})

    def repo(self, name: str, git: bool = True) -> Path:
        path = self.root / "repos" / name
        path.mkdir(parents=True)
        (path / "README.md").write_text(f"# {name}\n")
        (path / "notes.txt").write_text("uncommitted work\n")
        if git:
            for args in (
                ["init", "-q"],
                ["add", "README.md"],
                ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"],
            ):
                subprocess.run(["git", *args], cwd=path, check=True, capture_output=True)
        return path

    def tasks(self, lines: list[dict[str, Any]]) -> Path:
        path = self.root / "tasks.jsonl"
        path.write_text("".join(json.dumps(line) + "\n" for line in lines))
        return path

    def run(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return run_cli(["batch", *args], cwd=self.root, env=self.env(), timeout=timeout)


@pytest.fixture
def batch(tmp_path: Path) -> Iterator[Batch]:
    with FakeDeepSeekServer(handler=scripted()) as server:
        config_dir = tmp_path / "cfg"
        config_dir.mkdir()
        # Batch copies are new folders nobody trusted: the providers come from the user's
        # own config, as a user's would.
        (config_dir / "config.toml").write_text(
            fake_project_toml(server.base_url, server.base_url, key_env=KEY_ENV, max_steps=6)
        )
        yield Batch(tmp_path, server, config_dir, tmp_path / "data")


def rows_of(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def tree_hash(path: Path) -> str:
    digest = hashlib.sha256()
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        digest.update(str(file.relative_to(path)).encode() + b"\0" + file.read_bytes())
    return digest.hexdigest()


def eight_tasks(batch: Batch, last: dict[str, Any]) -> list[dict[str, Any]]:
    lines: list[dict[str, Any]] = []
    for i in range(6):
        repo = batch.repo(f"r{i}", git=i % 2 == 0)
        lines.append(
            {
                "id": f"ok-{i}",
                "repo": str(repo),
                "task": f"[ok-{i}] create done.txt",
                # The API key never reaches a task's own commands.
                "verify": "test -f done.txt && ! env | grep -q sk-test",
            }
        )
    lazy = batch.repo("lazy")
    lines.append(
        {
            "id": "lazy-1",
            "repo": str(lazy),
            "task": "[lazy-1] create done.txt",
            "verify": "test -f done.txt || { echo no done.txt here; exit 3; }",
        }
    )
    lines.append(last)
    return lines


def check_common_rows(batch: Batch, out: Path, engine: str, ids: list[str]) -> dict[str, Any]:
    rows = rows_of(out)
    assert sorted(r["id"] for r in rows) == sorted(ids), "every task exactly once"
    by_id = {r["id"]: r for r in rows}
    for i in range(6):
        row = by_id[f"ok-{i}"]
        assert row["engine"] == engine
        assert row["error_class"] is None, row
        assert row["solved"] is True and row["verify_exit_code"] == 0
        assert row["exit_code"] == 0 and row["stop_reason"] == "done"
        assert row["route"] == "executor_only"
        assert row["usage"]["executor"]["requests"] == 2
        assert row["cost_usd"]["total"] == row["cost_usd"]["executor"] > 0
        assert 0 <= row["cache_hit_ratio"]["executor"] <= 1
        task_dir = out / f"ok-{i}"
        patch = (task_dir / "diff.patch").read_text()
        assert "+++ b/done.txt" in patch and f"+ok-{i}" in patch
        trajectory = (task_dir / "trajectory.jsonl").read_text().splitlines()
        kinds = [json.loads(x).get("kind") for x in trajectory]
        assert "tool_call" in kinds and "usage" in kinds
        assert (task_dir / "session.db").exists()
    lazy = by_id["lazy-1"]
    assert lazy["solved"] is False and lazy["verify_exit_code"] == 3
    assert "no done.txt here" in lazy["verify_output_tail"]
    assert lazy["error_class"] is None
    return by_id


def test_local_engine_eight_tasks_every_row_complete(batch: Batch) -> None:
    lines = eight_tasks(
        batch,
        {"id": "broken-1", "repo": str(batch.repo("broken")), "task": "[broken-1] anything"},
    )
    sources = {line["id"]: tree_hash(Path(line["repo"])) for line in lines}
    tasks = batch.tasks(lines)
    proc = batch.run(str(tasks), "--out", "out", "--yes", "--concurrency", "3", "--swe-bench")
    out = batch.root / "out"
    assert proc.returncode == 1, proc.stderr  # one task failed
    by_id = check_common_rows(batch, out, "local", [line["id"] for line in lines])
    broken = by_id["broken-1"]
    assert broken["error_class"] == "model_error" and broken["exit_code"] == 1
    for line in lines:  # the sources are never modified
        assert tree_hash(Path(line["repo"])) == sources[line["id"]]
    assert "solved by verify: 6/7" in proc.stdout
    assert "executor" in proc.stdout
    summary = json.loads((out / "summary.json").read_text())
    assert summary["tasks"] == 8 and summary["solved"] == 6 and summary["errors"] == 1
    assert summary["cost_per_solved_usd"]["executor"] > 0
    preds = json.loads((out / "preds.json").read_text())
    assert {p["instance_id"] for p in preds} == set(by_id)
    assert "done.txt" in next(p for p in preds if p["instance_id"] == "ok-0")["model_patch"]

    # A second run with the same --out skips every finished task.
    before = len(batch.server.requests)
    again = batch.run(str(tasks), "--out", "out", "--yes")
    assert "8 task(s) finished already" in again.stderr
    assert len(batch.server.requests) == before
    assert len(rows_of(out)) == 8


def test_ray_engine_eight_tasks_on_two_cpus_with_a_worker_that_dies(batch: Batch) -> None:
    pytest.importorskip("ray")
    mark = batch.root / "died-once"
    die = {
        "id": "die-1",
        "repo": str(batch.repo("die")),
        "task": "[die-1] create done.txt",
        # The first attempt kills its own Ray worker; Ray runs the task again. Only a command
        # outside the sandbox can see the worker, so this one is run unconfined by name.
        # The worker it runs in no longer shows the key in its environment block.
        "setup": f"if [ ! -e {mark} ]; then touch {mark}; kill -9 $PPID; fi; "
        "! grep -qa sk-test /proc/$PPID/environ",
        "unconfined": ["setup"],
        "verify": "test -f done.txt",
    }
    lines = eight_tasks(batch, die)
    tasks = batch.tasks(lines)
    proc = batch.run(
        str(tasks), "--out", "out", "--yes", "--engine", "ray", "--ray-cpus", "2", timeout=600
    )
    out = batch.root / "out"
    assert proc.returncode == 0, proc.stdout + proc.stderr
    by_id = check_common_rows(batch, out, "ray", [line["id"] for line in lines])
    assert mark.exists(), "the first attempt ran and killed its worker"
    assert by_id["die-1"]["solved"] is True and by_id["die-1"]["engine"] == "ray"
    workers = {r["worker"] for r in by_id.values()}
    assert len(workers) >= 2, "tasks ran in Ray worker processes, not in the driver"
    assert "solved by verify: 7/8" in proc.stdout


def test_resume_after_sigkill_loses_and_repeats_no_row(batch: Batch, tmp_path: Path) -> None:
    batch.server.handler = scripted(latency=0.4)
    lines = [
        {
            "id": f"ok-{i}",
            "repo": str(batch.repo(f"k{i}")),
            "task": f"[ok-{i}] create done.txt",
            "verify": "test -f done.txt",
        }
        for i in range(6)
    ]
    tasks = batch.tasks(lines)
    out = batch.root / "out"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "reasonix",
            "batch",
            str(tasks),
            "--out",
            "out",
            "--yes",
            "--concurrency",
            "2",
        ],
        cwd=batch.root,
        env=batch.env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    results = out / "results.jsonl"
    while time.monotonic() < deadline:
        if results.exists() and len(results.read_text().splitlines()) >= 2:
            break
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    first = rows_of(out)
    assert 2 <= len(first) < 6, "killed mid-batch"
    again = batch.run(str(tasks), "--out", "out", "--yes", "--concurrency", "2")
    assert again.returncode == 0, again.stderr
    rows = rows_of(out)
    assert sorted(r["id"] for r in rows) == sorted(line["id"] for line in lines)
    assert rows[: len(first)] == first, "rows written before the kill are kept as they were"
    assert all(r["solved"] for r in rows)


def test_batch_budget_stops_new_tasks(batch: Batch) -> None:
    lines = [
        {"id": f"ok-{i}", "repo": str(batch.repo(f"b{i}")), "task": f"[ok-{i}] create done.txt"}
        for i in range(4)
    ]
    tasks = batch.tasks(lines)
    proc = batch.run(
        str(tasks), "--out", "out", "--yes", "--concurrency", "1", "--max-cost", "0.0000001"
    )
    assert proc.returncode == 1
    rows = rows_of(batch.root / "out")
    assert [r["id"] for r in rows] == ["ok-0"]
    summary = json.loads((batch.root / "out" / "summary.json").read_text())
    assert summary["not_started"] == ["ok-1", "ok-2", "ok-3"]
    assert "budget of $0.0000 reached: 3 task(s) not started" in proc.stdout
    assert len(batch.server.requests) <= 2, "the first task stopped at the budget too"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"id": "a", "repo": "."}\n', "tasks.jsonl:1: missing task"),
        (
            '{"id": "a", "repo": ".", "task": "x"}\n{"id": "a", "repo": ".", "task": "y"}\n',
            "tasks.jsonl:2: id 'a' is used already on line 1",
        ),
        ("not json\n", "tasks.jsonl:1: not a JSON object"),
        ('{"id": "a b", "repo": ".", "task": "x"}\n', "id 'a b' must be letters"),
        ('{"id": "a", "repo": "missing", "task": "x"}\n', "repo 'missing' is not a folder"),
        ('{"id": "a", "repo": ".", "task": "x", "colour": 1}\n', "unknown key(s) colour"),
    ],
)
def test_bad_task_files_say_which_line_and_what_to_fix(
    batch: Batch, content: str, message: str
) -> None:
    (batch.root / "tasks.jsonl").write_text(content)
    proc = batch.run("tasks.jsonl", "--out", "out")
    assert proc.returncode == 2
    assert message in proc.stderr
    assert not (batch.root / "out").exists() or not (batch.root / "out" / "results.jsonl").exists()


def test_ray_engine_without_ray_says_how_to_install(batch: Batch) -> None:
    fake = batch.root / "no-ray"
    (fake / "ray").mkdir(parents=True)
    (fake / "ray" / "__init__.py").write_text("raise ImportError('No module named ray')\n")
    lines = [{"id": "ok-0", "repo": str(batch.repo("n0")), "task": "[ok-0] create done.txt"}]
    tasks = batch.tasks(lines)
    proc = subprocess.run(
        [sys.executable, "-m", "reasonix", "batch", str(tasks), "--out", "out", "--engine", "ray"],
        cwd=batch.root,
        env=batch.env(PYTHONPATH=str(fake)),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 2
    assert "pip install 'reasonix[ray]'" in proc.stderr


def _together(count: int) -> Any:
    """A handler like ``scripted()`` whose first answer to each task waits until ``count``
    tasks have asked: it answers only when that many run at the same time (a 400 after 120 s
    of waiting, which fails the task)."""
    import threading

    barrier = threading.Barrier(count, timeout=120)
    inner = scripted()

    def handler(request: RecordedRequest) -> Reply:
        if not any(m.get("role") == "assistant" for m in request.messages):
            try:
                barrier.wait()
            except threading.BrokenBarrierError:
                return Reply.failing(Fault(status=400, message="tasks did not run together"))
        reply: Reply = inner(request)
        return reply

    return handler


def test_ray_runs_as_many_tasks_at_once_as_asked_whatever_its_cpus(batch: Batch) -> None:
    # A task waits on the model: on one CPU, four of them run at once, in one worker.
    pytest.importorskip("ray")
    batch.server.handler = _together(4)
    lines = [
        {"id": f"ok-{i}", "repo": str(batch.repo(f"r{i}")), "task": f"[ok-{i}] create done.txt"}
        for i in range(4)
    ]
    proc = batch.run(
        str(batch.tasks(lines)),
        *("--out", "out", "--yes", "--engine", "ray", "--ray-cpus", "1", "--concurrency", "4"),
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = rows_of(batch.root / "out")
    assert sorted(r["id"] for r in rows) == [f"ok-{i}" for i in range(4)]
    assert all(not r.get("error_class") for r in rows), rows
    # One worker process per CPU holds them all: no process start and import per task.
    assert len({r["worker"] for r in rows}) == 1, rows
    assert re.search(r"effective concurrency \d+\.\d of 4 asked", proc.stdout), proc.stdout


def test_ray_task_keeps_the_environment_its_driver_gave(batch: Batch) -> None:
    """A driver that started Ray itself (the bench does) hands the task its environment in the
    settings: what a worker runs uses it, key included, and the task's commands still do not
    see the key. (A worker once replaced it with its own environment: every task a
    ConfigError.)"""
    from reasonix.batch.engines import _ray_task
    from reasonix.batch.runner import RunSettings
    from reasonix.batch.tasks import BatchTask

    repo = batch.repo("given")
    task = BatchTask("ok-given", str(repo), "[ok-given] create done.txt")
    task = BatchTask.from_dict(
        {**task.to_dict(), "verify": "test -f done.txt && ! env | grep -q sk-test"}
    )
    environ = batch.env()
    assert KEY_ENV in environ
    settings = RunSettings(
        out=str(batch.root / "out"),
        engine="ray",
        yes=True,
        user_config=str(batch.config_dir / "config.toml"),
        environ=environ,
    )
    assert KEY_ENV not in os.environ
    row = _ray_task(task.to_dict(), dataclasses.asdict(settings), None)
    assert row["error_class"] is None, row
    assert row["solved"] is True and row["stop_reason"] == "done"


def test_local_tasks_do_not_wait_on_each_others_blocking_work(batch: Batch) -> None:
    """On the local engine a task's work that does not await (here: the git its session asks
    about the copy, held until the other task has had its first answer) holds up only that
    task. On one event loop shared by every task the other task could not even read its
    answer while this git ran, so the git would give up waiting."""
    real_git = subprocess.run(["which", "git"], capture_output=True, text=True, check=True)
    bin_dir = batch.root / "bin"
    bin_dir.mkdir()
    started, answered, log = (batch.root / n for n in ("git-held", "b-answered", "git.log"))
    wrapper = bin_dir / "git"
    wrapper.write_text(
        "#!/bin/sh\n"
        # Only the first `status --porcelain --branch` (the facts) in slow-a's copy waits (2.5 s at
        # most: the session's own timeout for this git is 3 s).
        f'case "$PWD $*" in *slow-a/repo*status*--porcelain*--branch*)\n'
        f"  if [ ! -e {started} ]; then touch {started}; i=0\n"
        f"    while [ ! -e {answered} ] && [ $i -lt 25 ]; do sleep 0.1; i=$((i+1)); done\n"
        f"    if [ -e {answered} ]; then echo saw >> {log}; else echo gave-up >> {log}; fi\n"
        "  fi;;\n"
        "esac\n"
        f'exec {real_git.stdout.strip()} "$@"\n'
    )
    wrapper.chmod(0o755)
    inner = scripted()

    def handler(request: RecordedRequest) -> Reply:
        text = _first_user_text(request)
        step = sum(1 for m in request.messages if m.get("role") == "assistant")
        if text.startswith("[ok-b]") and step == 0:
            # Task ok-b gets its first answer only once slow-a's git is running.
            for _ in range(200):
                if started.exists():
                    break
                time.sleep(0.05)
        if text.startswith("[ok-b]") and step == 1:
            answered.touch()  # ok-b read its answer, ran its tool and asked again
        reply: Reply = inner(request)
        return reply

    batch.server.handler = handler
    lines = [
        {"id": "slow-a", "repo": str(batch.repo("a")), "task": "[slow-a] answer"},
        {"id": "ok-b", "repo": str(batch.repo("b")), "task": "[ok-b] create done.txt"},
    ]
    env = batch.env(PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}")
    proc = run_cli(
        ["batch", str(batch.tasks(lines)), "--out", "out", "--yes", "--concurrency", "2"],
        cwd=batch.root,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = {r["id"]: r for r in rows_of(batch.root / "out")}
    assert set(rows) == {"slow-a", "ok-b"} and not any(r["error_class"] for r in rows.values())
    assert log.read_text().split() == ["saw"], "slow-a's git was held, and ok-b went on"


def test_a_drivers_next_batch_runs_on_the_workers_of_its_last(
    batch: Batch, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A driver that keeps its own Ray instance (the bench, a harness) does not wait for worker
    processes to start and load reasonix again for each batch; once it releases them, the next
    batch starts its own (the control: the probe below tells the two apart)."""
    ray = pytest.importorskip("ray")
    from reasonix.batch.engines import HOSTS, Ledger, RayEngine
    from reasonix.batch.runner import RunSettings
    from reasonix.batch.tasks import BatchTask

    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "0")
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    environ = batch.env()
    settings = RunSettings(
        out=str(batch.root / "out"),
        engine="ray",
        yes=True,
        user_config=str(batch.config_dir / "config.toml"),
        environ=environ,
    )
    engine = RayEngine(env={KEY_ENV: environ[KEY_ENV]})

    def one_batch(tag: str) -> set[str]:
        tasks = [
            BatchTask(
                f"ok-{tag}{i}", str(batch.repo(f"{tag}{i}")), f"[ok-{tag}{i}] create done.txt"
            )
            for i in range(2)
        ]
        rows: list[dict[str, Any]] = []
        asyncio.run(engine.run(tasks, settings, Ledger(), 2, rows.append, lambda t: None))
        assert [r["error_class"] for r in rows] == [None, None], rows
        return {r["worker"] for r in rows}

    ray.init(
        num_cpus=1,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {KEY_ENV: environ[KEY_ENV]}},
    )
    try:
        first, second = one_batch("a"), one_batch("b")
        HOSTS.release()
        third = one_batch("c")
    finally:
        HOSTS.release()
        ray.shutdown()
    assert len(first) == 1 and second == first, (first, second)
    assert third != first, "a released worker was still used"


def _ray_worker_pids() -> set[int]:
    """The Ray worker processes below this one (started by the raylet this process started):
    ``default_worker.py`` while it starts, ``ray::IDLE`` (or an actor's name) once it runs."""
    parents: dict[int, int] = {}
    lines: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
        lines[int(entry.name)] = cmdline
    ours: set[int] = set()
    frontier = {os.getpid()}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - ours
        ours |= frontier
    return {p for p in ours if "default_worker.py" in lines[p] or lines[p].startswith("ray::IDLE")}


def test_ray_hosts_take_the_workers_ray_started_with_the_instance(
    batch: Batch, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``reasonix batch --engine ray`` starts its own instance, and Ray starts a worker process
    per CPU with it: the batch's hosts run in those (the keys and folders handed to each host,
    not through a job runtime environment, whose workers are new processes started after
    the instance, while the batch waits). The worker processes are read the moment Ray's
    start returns, before any host is asked for; the tasks' rows name the process they ran in.
    The keys still reach the tasks (they finish) and never a worker's environment block."""
    ray = pytest.importorskip("ray")
    from reasonix.batch.engines import PLAIN_VARS, Ledger, RayEngine
    from reasonix.batch.runner import RunSettings
    from reasonix.batch.tasks import BatchTask

    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "0")
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    monkeypatch.delenv(KEY_ENV, raising=False)
    environ = batch.env()
    assert not ray.is_initialized()
    at_start: list[set[int]] = []
    real_init = ray.init

    def init(**options: Any) -> Any:
        assert "runtime_env" not in options, options
        answer = real_init(**options)
        for _ in range(300):  # the raylet has spawned them: wait until they are listed
            if _ray_worker_pids():
                break
            time.sleep(0.1)
        at_start.append(_ray_worker_pids())
        return answer

    monkeypatch.setattr(ray, "init", init)
    mark = batch.root / "environ-checked"
    tasks = [
        BatchTask.from_dict(
            {
                "id": f"ok-{i}",
                "repo": str(batch.repo(f"w{i}")),
                "task": f"[ok-{i}] create done.txt",
                # The worker's environment block never had the key.
                "setup": f"! grep -qa sk-test /proc/$PPID/environ && touch {mark}",
                "unconfined": ["setup"],
            }
        )
        for i in range(2)
    ]
    # As reasonix batch gives them: no environment in the settings, the key and the config
    # folder handed to the engine.
    settings = RunSettings(out=str(batch.root / "out"), engine="ray", yes=True)
    env = {k: environ[k] for k in (KEY_ENV, *PLAIN_VARS) if k in environ}
    assert "REASONIX_CONFIG_DIR" in env
    engine = RayEngine(num_cpus=1, env=env)
    rows: list[dict[str, Any]] = []
    asyncio.run(engine.run(tasks, settings, Ledger(), 2, rows.append, lambda t: None))
    assert not ray.is_initialized(), "the engine stops the instance it started"
    assert [r["error_class"] for r in rows] == [None, None], rows
    assert mark.exists()
    assert engine.started_in is not None and engine.started_in > 0
    (before,) = at_start
    workers = {int(r["worker"].rsplit(":", 1)[1]) for r in rows}
    assert len(workers) == 1, "one CPU: one host holds both tasks"
    assert workers <= before, (workers, before)


def test_a_narrower_batch_leaves_the_other_kept_workers_for_a_wider_one(
    batch: Batch, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A driver's batch at concurrency 1 uses one of the two workers its batch at 2 left; the
    other stays kept, so its next batch at 2 runs on both again, starting none (the bench
    runs its levels from 1 up). Control: once released, a batch at 2 starts its own."""
    ray = pytest.importorskip("ray")
    from reasonix.batch.engines import HOSTS, Ledger, RayEngine
    from reasonix.batch.runner import RunSettings
    from reasonix.batch.tasks import BatchTask

    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "0")
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    environ = batch.env()
    settings = RunSettings(
        out=str(batch.root / "out"),
        engine="ray",
        yes=True,
        user_config=str(batch.config_dir / "config.toml"),
        environ=environ,
    )
    engine = RayEngine(env={KEY_ENV: environ[KEY_ENV]})

    def one_batch(tag: str, concurrency: int) -> set[str]:
        tasks = [
            BatchTask(f"ok-{tag}{i}", str(batch.repo(f"{tag}{i}")), f"[ok-{tag}{i}] answer")
            for i in range(2)
        ]
        rows: list[dict[str, Any]] = []
        asyncio.run(engine.run(tasks, settings, Ledger(), concurrency, rows.append, lambda t: None))
        assert [r["error_class"] for r in rows] == [None, None], rows
        return {r["worker"] for r in rows}

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        wide = one_batch("a", 2)
        narrow = one_batch("b", 1)
        again = one_batch("c", 2)
        HOSTS.release()
        fresh = one_batch("d", 2)
    finally:
        HOSTS.release()
        ray.shutdown()
    assert len(wide) == 2 and narrow < wide, (wide, narrow)
    assert again == wide, "a kept worker was ended by the narrower batch"
    assert not fresh & wide, "a released worker was still used"
