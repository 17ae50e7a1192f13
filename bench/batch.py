"""Batch throughput: tasks per minute of the local and the Ray engine as concurrency grows,
against a fake server that takes ``LATENCY`` seconds before each answer (two requests a task:
a write_file call, then the final answer). The engines are driven in process, the way
``reasonix batch`` drives them, with reasonix's bytecode compiled (as an installed copy has
it: the Ray workers import reasonix as they start). Each figure is also given as a share of
linear scaling (tasks/min at N over N times tasks/min at 1).

Ray is measured twice, on the machine's own CPU count (tasks wait on the model, so each asks
for a share of a CPU and the concurrency asked is what runs):

- **cold**, as ``reasonix batch --engine ray`` runs: every level starts its own Ray instance,
  its workers load reasonix, the tasks run, and the instance stops; the figure counts all of
  it, and is given again over the time after Ray's own start (the workers' start and load
  still counted), with that start's seconds;
- **warm**: one instance started for the section, and the workers a driver's batch ran on
  kept for its next batch (:class:`reasonix.batch.engines.HostPool`; the first started by a
  small batch before the first level), as a harness driving the engine keeps them.

Ray's start is a fixed cost a batch pays once whatever its concurrency, so the cold figure's
share of linear falls as the level's run gets shorter; the scaling target (0.8x at 8) is
measured on the warm engine and on the cold one after Ray's start. The load average at the
start and the end of each engine's runs is printed beside its figures (a shared machine)."""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.common import print_table
from reasonix.batch.engines import Engine, Ledger, LocalEngine, RayEngine
from reasonix.batch.runner import RunSettings
from reasonix.batch.tasks import BatchTask
from reasonix.testing import FakeDeepSeekServer, Fault, Reply
from reasonix.testing.fake_server import RecordedRequest
from reasonix.testing.project import fake_project_toml

LATENCY = 2.0
KEY_ENV = "REASONIX_BENCH_KEY"
KEY = "sk-bench"
#: Ray's own variables for the instances the bench starts (no usage report, no token).
RAY_ENV = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}


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


def _elapsed(engine: Engine, tasks: list[BatchTask], settings: RunSettings, c: int) -> float:
    """Seconds the engine took to run ``tasks`` at concurrency ``c`` (every one must pass)."""
    rows: list[dict[str, Any]] = []
    start = time.perf_counter()
    asyncio.run(engine.run(tasks, settings, Ledger(), c, rows.append, lambda t: None))
    elapsed = time.perf_counter() - start
    failed = [r["id"] for r in rows if r.get("error_class")]
    if failed or len(rows) != len(tasks):
        why = next((r.get("error") for r in rows if r.get("error_class")), "")
        raise RuntimeError(f"bench tasks failed: {failed or 'rows missing'}: {why}")
    return elapsed


def _load() -> float:
    return round(os.getloadavg()[0], 1)


def _shares(figures: dict[str, float], levels: list[int]) -> dict[str, float]:
    base = figures[str(levels[0])] / levels[0]
    return {str(c): round(figures[str(c)] / (c * base), 2) for c in levels}


def _per_min(n: int, seconds: float) -> float:
    return round(n / seconds * 60, 1)


def _ray_cold(
    levels: list[int], n: int, make: Callable[[str], tuple[list[BatchTask], RunSettings]]
) -> dict[str, Any]:
    """Each level as ``reasonix batch --engine ray`` runs it: the engine starts and stops Ray."""
    whole: dict[str, float] = {}
    after: dict[str, float] = {}
    start_s: dict[str, float] = {}
    for c in levels:
        tasks, settings = make(f"ray-cold-{c}")
        engine = RayEngine(env={KEY_ENV: KEY})
        seconds = _elapsed(engine, tasks, settings, c)
        started = engine.started_in or 0.0
        whole[str(c)] = _per_min(n, seconds)
        after[str(c)] = _per_min(n, seconds - started)
        start_s[str(c)] = round(started, 1)
    return {"whole": whole, "after_start": after, "ray_start_s": start_s}


def _ray_warm(
    levels: list[int], n: int, make: Callable[[str], tuple[list[BatchTask], RunSettings]]
) -> dict[str, Any]:
    """One instance for every level, and the workers kept from one batch to the next."""
    import ray

    from reasonix.batch.engines import HOSTS

    t0 = time.perf_counter()
    ray.init(include_dashboard=False, log_to_driver=False)
    started = round(time.perf_counter() - t0, 1)
    figures: dict[str, float] = {}
    try:
        engine = RayEngine(env={KEY_ENV: KEY})
        # Warm: the workers of the widest level, started by a small batch of their own.
        tasks, settings = make("ray-warmup")
        _elapsed(engine, tasks[:2], settings, max(levels))
        for c in levels:
            tasks, settings = make(f"ray-warm-{c}")
            figures[str(c)] = _per_min(n, _elapsed(engine, tasks, settings, c))
    finally:
        HOSTS.release()
        ray.shutdown()
    return {"figures": figures, "ray_start_s": started}


def run_batch(quick: bool) -> dict[str, Any]:
    from bench.startup import compile_bytecode

    compiled = compile_bytecode()
    levels = [1, 4] if quick else [1, 2, 4, 8]
    n = 8 if quick else 16
    out: dict[str, Any] = {
        "latency_s": LATENCY,
        "tasks_per_level": n,
        "bytecode_compiled": compiled,
        "local": {},
        "ray_cold": {},
        "ray_warm": {},
        "load": {},
    }
    with tempfile.TemporaryDirectory() as tmp, FakeDeepSeekServer(handler=_handler) as server:
        root = Path(tmp)
        user = root / "config.toml"
        user.write_text(fake_project_toml(server.base_url, server.base_url, key_env=KEY_ENV))
        env = {KEY_ENV: KEY, "PATH": "/usr/bin:/bin"}

        def make(tag: str, engine: str = "ray") -> tuple[list[BatchTask], RunSettings]:
            settings = RunSettings(
                out=str(root / "out" / tag),
                engine=engine,
                overrides={"planner.enabled": False},
                yes=True,
                user_config=str(user),
                # The local engine is handed the environment, keys included, as reasonix batch
                # hands it; a Ray task reads its worker's, with the key its host holds.
                environ=env if engine == "local" else None,
            )
            return _tasks(root, n, tag), settings

        began = _load()
        for c in levels:
            tasks, settings = make(f"local-{c}", "local")
            out["local"][str(c)] = _per_min(n, _elapsed(LocalEngine(), tasks, settings, c))
        out["load"]["local"] = [began, _load()]
        out["local_linear_share"] = _shares(out["local"], levels)
        try:
            import ray  # noqa: F401
        except ImportError:
            out["ray_cold"] = out["ray_warm"] = {
                "skipped": "ray is not installed (pip install 'reasonix[ray]')"
            }
        else:
            saved = {k: os.environ.get(k) for k in RAY_ENV}
            os.environ.update(RAY_ENV)
            try:
                began = _load()
                out["ray_cold"] = _ray_cold(levels, n, make)
                out["load"]["ray_cold"] = [began, _load()]
                began = _load()
                out["ray_warm"] = _ray_warm(levels, n, make)
                out["load"]["ray_warm"] = [began, _load()]
            finally:
                for k, v in saved.items():
                    if v is None:
                        os.environ.pop(k, None)
                    else:
                        os.environ[k] = v
            cold = out["ray_cold"]
            cold["whole_linear_share"] = _shares(cold["whole"], levels)
            cold["after_start_linear_share"] = _shares(cold["after_start"], levels)
            warm = out["ray_warm"]
            warm["linear_share"] = _shares(warm["figures"], levels)
    _print(out, levels, n)
    return out


def _print(out: dict[str, Any], levels: list[int], n: int) -> None:
    def cell(figures: dict[str, Any], shares: dict[str, Any], c: int) -> str:
        if str(c) not in figures:
            return "-"
        return f"{figures[str(c)]} ({shares[str(c)]:.2f}x)"

    cold, warm = out["ray_cold"], out["ray_warm"]
    rows = []
    for c in levels:
        row = [f"concurrency {c}", cell(out["local"], out["local_linear_share"], c)]
        if "whole" in cold:
            row += [
                cell(cold["whole"], cold["whole_linear_share"], c),
                cell(cold["after_start"], cold["after_start_linear_share"], c),
                f"{cold['ray_start_s'][str(c)]} s",
                cell(warm["figures"], warm["linear_share"], c),
            ]
        rows.append(row)
    headers = ["", "local", "ray cold", "ray cold after start", "Ray start", "ray warm"]
    print_table(
        f"Batch throughput (tasks/min and share of linear; {n} tasks per level, {LATENCY} s per "
        "model answer)",
        rows,
        headers if "whole" in cold else headers[:2],
    )
    if "skipped" in cold:
        print(f"  ray: {cold['skipped']}")
    else:
        print(
            "  ray cold: each level starts and stops its own Ray instance, as `reasonix batch "
            "--engine ray` does; 'after start' leaves out Ray's own start (the workers' start "
            f"and load counted). ray warm: one instance (started in {warm['ray_start_s']} s, not "
            "counted), workers kept between levels. The 0.8x target is read on 'ray warm' and "
            "'ray cold after start'."
        )
    loads = ", ".join(f"{k} {a}-{b}" for k, (a, b) in out["load"].items())
    print(f"  load average (start-end): {loads}")
