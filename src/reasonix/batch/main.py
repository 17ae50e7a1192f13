"""``reasonix batch TASKS.jsonl --out DIR``: many headless tasks, locally or on Ray.

Progress goes to stderr (a bar on a terminal, one line per finished task otherwise); the summary
goes to stdout and to ``DIR/summary.json``. Exit codes: 0 every task ran and none failed, 1 some
task failed (an ``error_class`` in its row) or was not started because the batch budget ran out,
2 usage or configuration error.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from reasonix.app.launch import EXIT_FAILURE, EXIT_OK, StartupError, launch, overrides_from


def run_batch(args: argparse.Namespace) -> int:
    from reasonix.batch.engines import Ledger, LocalEngine, RayEngine
    from reasonix.batch.results import (
        ResultsFile,
        concurrency_line,
        summarise,
        write_predictions,
    )
    from reasonix.batch.runner import RunSettings
    from reasonix.batch.tasks import load_tasks
    from reasonix.errors import ConfigError

    try:
        tasks = load_tasks(Path(args.tasks))
    except ConfigError as exc:
        raise StartupError(str(exc)) from None
    for task in tasks:
        if task.unconfined:
            # The user's explicit choice, said before anything runs (ids are checked on load).
            print(
                f"reasonix batch: task {task.id} runs its {' and '.join(task.unconfined)} "
                'UNCONFINED (the task file\'s "unconfined"): outside the sandbox, as your user',
                file=sys.stderr,
            )
    # The one start-up, for the keys: they leave this process's environment now; the local
    # engine hands them to each session, the Ray engine to its workers through Ray's runtime
    # environment. Each task loads its own copy's configuration and checks its keys.
    started = launch(Path.cwd(), overrides_from(args), trust=False, credentials=False, store=False)
    assert started.config is not None  # not lenient: it loaded
    base, environ = started.config, started.environ
    if args.concurrency is not None and args.concurrency < 1:
        raise StartupError("--concurrency must be at least 1")
    max_cost = _money(args.max_cost)
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    results = ResultsFile(out)
    done = results.finished_ids()
    todo = [t for t in tasks if t.id not in done]
    prior = [r for r in results.rows() if r["id"] in {t.id for t in tasks}]
    ledger = Ledger(max_cost=max_cost)
    for row in prior:
        ledger.spend(row)
    overrides = {k: v for k, v in overrides_from(args).items() if v is not None}
    overrides.pop("budget.max_session_usd", None)
    keys = {p.api_key_env for p in base.providers.values() if p.api_key_env}
    settings = RunSettings(
        out=str(out),
        engine=args.engine,
        overrides=overrides,
        yes=args.yes,
        # --trust (a common flag) trusts the project files of the tasks' repositories.
        trust=bool(getattr(args, "trust", False)),
        timeout=args.timeout,
        environ=environ if args.engine == "local" else None,
    )
    if args.engine == "ray":
        env = {k: environ[k] for k in keys if k in environ}
        for name in ("REASONIX_CONFIG_DIR", "REASONIX_DATA_DIR"):
            if name in environ:
                env[name] = environ[name]
        engine: Any = RayEngine(args.ray_address, num_cpus=args.ray_cpus, env=env)
        concurrency = args.concurrency or args.ray_cpus or os.cpu_count() or 2
    else:
        engine = LocalEngine()
        concurrency = args.concurrency or 4
    if done:
        print(
            f"reasonix batch: {len(done & {t.id for t in tasks})} task(s) finished already in "
            f"{results.path}; running the other {len(todo)}",
            file=sys.stderr,
        )
    progress = _Progress(len(tasks), len(tasks) - len(todo))

    def on_row(row: dict[str, Any]) -> None:
        results.append(row)
        progress.finished(row)

    ran: list[dict[str, Any]] = []

    def on_ran(row: dict[str, Any]) -> None:
        ran.append(row)
        on_row(row)

    began = time.monotonic()
    try:
        asyncio.run(engine.run(todo, settings, ledger, concurrency, on_ran, progress.started))
    except ConfigError as exc:
        raise StartupError(str(exc)) from None
    finally:
        progress.close()
    rows = [r for r in results.rows() if r["id"] in {t.id for t in tasks}]
    summary = summarise(rows)
    report = summary.to_dict()
    report["not_started"] = ledger.not_started
    report["engine"] = args.engine
    (out / "summary.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    if args.swe_bench:
        write_predictions(out, rows, base.executor.model)
    for line in summary.lines():
        print(line)
    if ran:
        print(concurrency_line(ran, time.monotonic() - began, concurrency))
    if ledger.not_started:
        print(
            f"budget of ${max_cost:.4f} reached: {len(ledger.not_started)} task(s) not started "
            f"({', '.join(ledger.not_started[:10])}); run again with a higher --max-cost",
        )
    failed = summary.errors > 0 or bool(ledger.not_started)
    return EXIT_FAILURE if failed else EXIT_OK


def _money(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        amount = float(value)
    except ValueError:
        raise StartupError(f"--max-cost takes an amount in USD, not {value!r}") from None
    if amount < 0:
        raise StartupError("--max-cost must not be negative")
    return amount


class _Progress:
    """A bar on a terminal, one line per finished task otherwise (both on stderr)."""

    def __init__(self, total: int, already: int) -> None:
        self.total = total
        self.count = already
        self.spent = 0.0
        self._bar: Any = None
        if sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

            self._bar = Progress(
                "[progress.description]{task.description}",
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=Console(stderr=True),
            )
            self._bar.start()
            self._task = self._bar.add_task("tasks", total=total, completed=already)

    def started(self, task: Any) -> None:
        if self._bar is not None:
            self._bar.update(self._task, description=f"running {task.id}")

    def finished(self, row: dict[str, Any]) -> None:
        # Every field printed is ours: ids are checked on load (letters, digits, . _ -),
        # verdicts and stop reasons are our own names.
        self.count += 1
        cost = float((row.get("cost_usd") or {}).get("total", 0.0))
        self.spent += cost
        if row.get("error_class"):
            verdict = f"error: {row['error_class']}"
        elif row.get("solved") is not None:
            verdict = "solved" if row["solved"] else "not solved"
        else:
            verdict = str(row.get("stop_reason"))
        line = f"[{self.count}/{self.total}] {row['id']}: {verdict}, ${cost:.6f}"
        if self._bar is not None:
            self._bar.update(self._task, advance=1)
            self._bar.console.print(line, markup=False, highlight=False)
        else:
            print(line, file=sys.stderr, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
