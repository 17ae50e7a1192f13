"""Batch throughput: tasks per minute of the local and the Ray engine as concurrency grows,
against a fake server that takes ``LATENCY`` seconds before each answer (two requests a task:
a write_file call, then the final answer). The engines are driven in process, the way
``reasonix batch`` drives them; Ray runs as a local instance started once for the section
(its start-up, ~10–20 s here, is reported separately and not counted in the throughput) with
the machine's own CPU count: tasks wait on the model, so each asks for a share of a CPU and
the concurrency asked is what runs. Each figure is also given as a share of linear scaling
(tasks/min at N over N times tasks/min at 1)."""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import print_table
from reasonix.batch.engines import Ledger, LocalEngine, RayEngine
from reasonix.batch.runner import RunSettings
from reasonix.batch.tasks import BatchTask
from reasonix.testing import FakeDeepSeekServer, Fault, Reply
from reasonix.testing.fake_server import RecordedRequest
from reasonix.testing.project import fake_project_toml

LATENCY = 2.0
KEY_ENV = "REASONIX_BENCH_KEY"


def _handler(request: RecordedRequest) -> Reply:
    step = sum(1 for m in request.messages if m.get("role") == "assistant")
    fault = Fault(stall_seconds=LATENCY, stall_after_bytes=0)
    if step == 0:
        call = Reply.call("write_file", {"path": "done.txt", "content": "done\n"})
        return Reply(tool_calls=call.tool_calls, reasoning="Write it.", fault=fault)
    return Reply(content="Done.", reasoning="Finished.", fault=fault)


def _tasks(root: Path, n: int, tag: str) -> list[BatchTask]:
    tasks = []
    for i in range(n):
        repo = root / "repos" / f"{tag}-{i}"
        repo.mkdir(parents=True)
        (repo / "README.md").write_text("bench\n")
        tasks.append(BatchTask(f"{tag}-{i}", str(repo), "create done.txt"))
    return tasks


def _throughput(engine: Any, tasks: list[BatchTask], settings: RunSettings, c: int) -> float:
    rows: list[dict[str, Any]] = []
    start = time.perf_counter()
    asyncio.run(engine.run(tasks, settings, Ledger(), c, rows.append, lambda t: None))
    elapsed = time.perf_counter() - start
    failed = [r["id"] for r in rows if r.get("error_class")]
    if failed or len(rows) != len(tasks):
        why = next((r.get("error") for r in rows if r.get("error_class")), "")
        raise RuntimeError(f"bench tasks failed: {failed or 'rows missing'}: {why}")
    return len(tasks) / elapsed * 60


def run_batch(quick: bool) -> dict[str, Any]:
    levels = [1, 4] if quick else [1, 2, 4, 8]
    n = 8 if quick else 16
    out: dict[str, Any] = {"latency_s": LATENCY, "tasks_per_level": n, "local": {}, "ray": {}}
    with tempfile.TemporaryDirectory() as tmp, FakeDeepSeekServer(handler=_handler) as server:
        root = Path(tmp)
        user = root / "config.toml"
        user.write_text(fake_project_toml(server.base_url, server.base_url, key_env=KEY_ENV))
        env = {KEY_ENV: "sk-bench", "PATH": "/usr/bin:/bin"}

        def settings(engine: str, tag: str) -> RunSettings:
            return RunSettings(
                out=str(root / "out" / tag),
                engine=engine,
                overrides={"planner.enabled": False},
                yes=True,
                user_config=str(user),
                environ=env,
            )

        for c in levels:
            tag = f"local-{c}"
            tasks = _tasks(root, n, tag)
            out["local"][str(c)] = round(
                _throughput(LocalEngine(), tasks, settings("local", tag), c), 1
            )
        try:
            import ray
        except ImportError:
            out["ray"] = {"skipped": "ray is not installed (pip install 'reasonix[ray]')"}
        else:
            t0 = time.perf_counter()
            # The key reaches the workers as reasonix batch sends it: Ray's runtime environment.
            ray.init(
                include_dashboard=False,
                log_to_driver=False,
                runtime_env={"env_vars": {KEY_ENV: "sk-bench"}},
            )
            out["ray_start_s"] = round(time.perf_counter() - t0, 1)
            try:
                for c in levels:
                    tag = f"ray-{c}"
                    tasks = _tasks(root, n, tag)
                    engine = RayEngine(env={KEY_ENV: "sk-bench"})
                    out["ray"][str(c)] = round(
                        _throughput(engine, tasks, settings("ray", tag), c), 1
                    )
            finally:
                ray.shutdown()
    for engine in ("local", "ray"):
        figures = out[engine]
        if str(levels[0]) in figures:
            base = figures[str(levels[0])] / levels[0]
            out[f"{engine}_linear_share"] = {
                str(c): round(figures[str(c)] / (c * base), 2) for c in levels if str(c) in figures
            }

    def cell(engine: str, c: int) -> str:
        if str(c) not in out[engine]:
            return "-"
        return f"{out[engine][str(c)]} ({out[f'{engine}_linear_share'][str(c)]:.2f}x linear)"

    rows = [[f"concurrency {c}", cell("local", c), cell("ray", c)] for c in levels]
    print_table(
        f"Batch throughput (tasks/min; {n} tasks per level, {LATENCY} s per model answer)",
        rows,
        ["", "local", "ray"],
    )
    if "ray_start_s" in out:
        print(f"  Ray local instance start-up: {out['ray_start_s']} s (not counted above)")
    return out
