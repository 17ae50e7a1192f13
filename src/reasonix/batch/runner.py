"""One task, start to finish: copy, setup, one headless turn through the session façade,
diff, verify, and the task's row.

``setup`` and ``verify`` run in the sandbox of the agent's own commands, their output redacted
(:mod:`reasonix.batch.commands`).

Everything a task leaves is under ``OUT/<id>/``: ``repo/`` (the copy the agent worked in),
``session.db`` (its stored session: ``reasonix sessions show`` reads it with
``REASONIX_DATA_DIR=OUT/<id>``), ``trajectory.jsonl`` (every event of the turn as one JSON object
per line, ``event.to_dict()``: the event lines ``reasonix run --output-format stream-json``
prints, without its ``init`` line and ``ts`` stamps, then the result object), ``diff.patch``
and ``setup.log`` / ``verify.log``.

The row (see :func:`run_task`) has the shapes of ``reasonix run --output-format json`` for
``usage`` and ``cost_usd``, plus the batch's own fields. Any failure becomes a row with an
``error_class``; nothing a task does stops the other tasks.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from reasonix.batch.commands import TaskCommands
from reasonix.batch.tasks import BatchTask
from reasonix.batch.workspace import baseline_for, diff, prepare_copy
from reasonix.errors import ConfigError, ReasonixError

if TYPE_CHECKING:
    from reasonix.messages import ImagePart

__all__ = ["RunSettings", "base_row", "preload", "run_task"]

#: The modules a task loads on first use (:func:`_run` and what it calls): a Ray worker loads
#: them before its first task (:func:`preload`), while the batch still prepares its copies,
#: rather than in every task it runs at first, all at once.
TASK_MODULES = (
    "reasonix.app.commands",
    "reasonix.app.environment",
    "reasonix.app.headless",
    "reasonix.app.launch",
    "reasonix.app.session",
    "reasonix.images",
    "reasonix.mcp.manager",
    "reasonix.providers.openai_compat",
    "reasonix.redaction",
    "reasonix.tools.builtin.web_search",
)

#: How much of a verify command's output a row keeps.
TAIL_CHARS = 2_000


@dataclass(frozen=True)
class RunSettings:
    """What every task of a batch shares (plain data: it travels to Ray workers).

    ``overrides`` are config keys from the command line; ``yes`` allows what would ask and
    approves plans (deny rules, plan mode and the sandbox still apply); ``trust`` trusts each
    task copy's project files; ``budget_left`` (USD, None for no limit) caps this task's spend;
    ``timeout`` bounds setup and verify commands (seconds); ``user_config`` is where the user's
    config file is (None: the usual place); ``environ`` the environment sessions read (keys
    included; None: this process's own)."""

    out: str
    engine: str
    overrides: Mapping[str, Any] = field(default_factory=dict)
    yes: bool = False
    trust: bool = False
    timeout: float = 1800.0
    user_config: str | None = None
    environ: Mapping[str, str] | None = None


def baselines_dir(settings: RunSettings) -> Path:
    """Where the batch keeps the shared clones its tasks' copies start from."""
    return Path(settings.out) / ".baselines"


def preload() -> None:
    """Import :data:`TASK_MODULES` now."""
    import importlib

    for name in TASK_MODULES:
        importlib.import_module(name)


def _tail(text: str) -> str:
    return text if len(text) <= TAIL_CHARS else "…" + text[-TAIL_CHARS:]


def base_row(task: BatchTask, settings: RunSettings) -> dict[str, Any]:
    return {
        "id": task.id,
        "engine": settings.engine,
        "exit_code": 1,
        "stop_reason": None,
        "route": None,
        "duration_ms": 0,
        "usage": {},
        "cost_usd": {"total": 0.0},
        "cache_hit_ratio": {},
        "verify_exit_code": None,
        "verify_output_tail": None,
        "solved": None,
        "error_class": None,
        "error": None,
        "session_id": None,
        "diff_bytes": 0,
        "worker": f"{socket.gethostname()}:{os.getpid()}",
    }


async def run_task(
    task: BatchTask, settings: RunSettings, budget_left: float | None = None
) -> dict[str, Any]:
    """Run ``task`` and return its row (never raises for what the task does)."""
    started = time.monotonic()
    row = base_row(task, settings)
    folder = Path(settings.out) / task.id
    try:
        await _run(task, settings, folder, row, budget_left)
    except ReasonixError as exc:
        row["error_class"] = type(exc).__name__
        row["error"] = str(exc)
    except Exception as exc:  # a crash of this task, reported in its row
        row["error_class"] = "crashed"
        row["error"] = f"{type(exc).__name__}: {exc}"
    if task.unconfined:
        row["unconfined"] = list(task.unconfined)
    row["duration_ms"] = int((time.monotonic() - started) * 1000)
    from reasonix.redaction import redact_value

    redacted: dict[str, Any] = redact_value(row)
    return redacted


async def _run(
    task: BatchTask,
    settings: RunSettings,
    folder: Path,
    row: dict[str, Any],
    budget_left: float | None,
) -> None:
    import asyncio

    from reasonix.app.headless import (
        YesApprover,
        approve_all_plans,
        reply_object,
        result_object,
        run_text,
    )
    from reasonix.app.launch import load
    from reasonix.app.session import AgentSession
    from reasonix.config import check_credentials
    from reasonix.events import JsonLinesSink
    from reasonix.safety.confinement import confinement_for
    from reasonix.store import SessionStore

    baseline = None
    if not task.is_url:
        baseline = await asyncio.to_thread(baseline_for, task.repo, baselines_dir(settings))
    copy = await asyncio.to_thread(prepare_copy, task.repo, task.is_url, folder / "repo", baseline)
    overrides = {**settings.overrides, **task.overrides}
    if budget_left is not None:
        configured = overrides.get("budget.max_session_usd")
        cap = budget_left if configured is None else min(float(configured), budget_left)
        overrides["budget.max_session_usd"] = max(cap, 0.0)
    # Loading registers the keys for redaction (a Ray worker has not read them as the command
    # line did), whatever their variables are called.
    try:
        config = load(
            copy,
            overrides,
            environ=settings.environ,
            user_config=settings.user_config,
            trust=settings.trust,
        )
    except ReasonixError as exc:  # the row names a configuration error as such
        raise ConfigError(str(exc)) from None
    problems = check_credentials(config, settings.environ)
    if problems:
        raise ConfigError(" ".join(problems))
    keys = tuple(sorted({p.api_key_env for p in config.providers.values() if p.api_key_env}))
    commands = TaskCommands(
        copy,
        settings.timeout,
        # The task's own sandbox settings; the task's output folder (its session store) and our
        # config folder stay invisible.
        confinement_for(config.sandbox, data_dir=folder, environ=settings.environ),
        unconfined=task.unconfined,
        key_vars=keys,
        include=tuple(config.environment.include),
        extra_env=dict(config.environment.set),
    )
    if task.setup:
        code, output = await commands.run("setup", task.setup)
        (folder / "setup.log").write_text(output, encoding="utf-8")
        if code != 0:
            row["error_class"] = "setup_failed"
            row["error"] = f"setup exited {code}: {_tail(output)}"
            return
    store = SessionStore(folder / "session.db")
    trajectory: IO[str] = (folder / "trajectory.jsonl").open("w", encoding="utf-8")
    try:
        session = await AgentSession.open(
            config,
            copy,
            store=store,
            approver=YesApprover() if settings.yes else None,
            sink=JsonLinesSink(trajectory),
            plan_approver=approve_all_plans if settings.yes else None,
            environ=settings.environ,
        )
        try:
            # Task text may be a slash command (``"/plan …"``), read off the one table.
            ran = await run_text(session, task.task, images=_task_images(task))
            if isinstance(ran, str):
                result = reply_object(session, task.task.strip().split()[0][1:], ran)
            else:
                result = result_object(session, ran)
            trajectory.write(json.dumps(result, ensure_ascii=False) + "\n")
            row.update(
                {
                    "exit_code": result["exit_code"],
                    "stop_reason": result["stop_reason"],
                    "route": result.get("route"),
                    "usage": result["usage"],
                    "cost_usd": result["cost_usd"],
                    "cache_hit_ratio": {
                        role: usage["cache_hit_ratio"] for role, usage in result["usage"].items()
                    },
                    "session_id": session.session_id,
                    "result": _tail(result["result"]),
                }
            )
            if result.get("closing"):  # what a slash command said after its turn (/init)
                row["closing"] = result["closing"]
            if result["questions"]:
                # The task stopped to ask the user (stop reason needs_input): what it asked,
                # for whoever reads the results.
                row["questions"] = result["questions"]
            if result["is_error"]:
                row["error_class"] = "model_error"
                row["error"] = _tail(result["result"])
        finally:
            await session.aclose()
    finally:
        trajectory.close()
        store.close()
    patch = await asyncio.to_thread(diff, copy)
    (folder / "diff.patch").write_text(patch, encoding="utf-8")
    row["diff_bytes"] = len(patch.encode())
    if task.verify:
        code, output = await commands.run("verify", task.verify)
        (folder / "verify.log").write_text(output, encoding="utf-8")
        row["verify_exit_code"] = code
        row["verify_output_tail"] = _tail(output)
        row["solved"] = code == 0


def _task_images(task: BatchTask) -> tuple[ImagePart, ...]:
    """The task's images as image parts (checked once when the task file was read)."""
    if not task.images:
        return ()
    from reasonix.images import load_image

    return tuple(load_image(Path(p).read_bytes(), name=Path(p).name, what=p) for p in task.images)
