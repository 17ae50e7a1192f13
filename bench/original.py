"""Host time per step against the original Reasonix (the Go one), measured in pairs.

The same task runs through ``reasonix run`` of each against one :class:`FakeDeepSeekServer` on
loopback that answers at once: ``STEPS`` mutating ``bash`` steps (step *i* writes ``out<i>.txt``,
the task of :mod:`bench.steps`), then a final answer. Both confine bash with bubblewrap (ours:
``[sandbox] bash = "bwrap"``; the original: ``[sandbox] bash = "enforce"``, which refuses bash
when it has no sandbox) and keep their own defaults otherwise (ours snapshots every step).

Host time per step is taken at the server: from the arrival of the first request to the arrival
of the one that follows the last tool call, over ``STEPS`` (the client's start-up and its final
answer fall outside). Runs alternate, ours then the original's, then the other way round, so a
change of load on a shared machine hits both; the figure that holds is the ratio, ours over the
original's, which is reported with the load average.

The original is not part of this project and is never built or installed by it: point
``REASONIX_ORIGINAL_BIN`` at its ``reasonix`` binary (its npm package ships one prebuilt). Unset,
the section says it was skipped.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.common import Stat, print_table
from bench.steps import _handler as step_task
from reasonix.testing import FakeDeepSeekServer, Reply
from reasonix.testing.fake_server import RecordedRequest
from reasonix.testing.project import fake_project_toml

BIN_ENV = "REASONIX_ORIGINAL_BIN"
STEPS = 40
KEY_ENV = "REASONIX_BENCH_KEY"
TASK = "write the files"
Handler = Callable[[RecordedRequest], Reply]
SKIPPED = f"skipped: set {BIN_ENV} to the original Reasonix's binary"

#: The original's project configuration: one OpenAI-compatible provider at the fake server (its
#: built-in DeepSeek provider speaks the Anthropic API, which the fake does not), with DeepSeek's
#: rule that reasoning is passed back; bash confined, nothing asked.
ORIGINAL_TOML = """\
default_model = "fake"

[[providers]]
name = "fake"
kind = "openai"
base_url = "{base_url}/v1"
model = "deepseek-flash"
api_key_env = "{key_env}"
reasoning_protocol = "deepseek"

[permissions]
mode = "allow"

[sandbox]
bash = "enforce"
network = false
"""


@dataclass
class Side:
    """One client of the pair: how to start its run of the task, in its own folder."""

    name: str
    argv: list[str]
    root: Path
    env: dict[str, str]
    per_step_ms: list[float] = field(default_factory=list)


def _clean_env(extra: dict[str, str]) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("REASONIX_", "DEEPSEEK_")) and k != "PYTEST_CURRENT_TEST"
    }
    env.update({KEY_ENV: "sk-bench", "NO_COLOR": "1", **extra})
    return env


def _project(root: Path) -> Path:
    """The task's folder: a small project (as in :mod:`bench.steps`)."""
    root.mkdir(parents=True)
    for i in range(50):
        (root / f"src{i}.py").write_text(f"x = {i}\n")
    return root


def ours(tmp: Path, server: FakeDeepSeekServer, steps: int, sandbox: str = "bwrap") -> Side:
    """``reasonix run`` of this checkout, bash in the kept bubblewrap sandbox (``sandbox``:
    ``[sandbox] bash``), snapshots on."""
    root = _project(tmp / "ours")
    cfg = tmp / "ours-config"
    cfg.mkdir()
    (cfg / "config.toml").write_text(
        fake_project_toml(server.base_url, server.base_url, key_env=KEY_ENV, max_steps=steps + 10)
        + f'\n[permissions]\nmode = "yolo"\n[sandbox]\nbash = "{sandbox}"\n'
        + ("allow_unconfined = true\n" if sandbox == "off" else "")
    )
    env = _clean_env({"REASONIX_CONFIG_DIR": str(cfg), "REASONIX_DATA_DIR": str(tmp / "ours-data")})
    argv = [sys.executable, "-m", "reasonix", "run", "--no-planner", "--yes", TASK]
    return Side("ours", argv, root, env)


def original(tmp: Path, server: FakeDeepSeekServer, binary: str, steps: int) -> Side:
    """The original's ``reasonix run``, with a home folder of its own (nothing of the user's
    is read or written) and no telemetry."""
    root = _project(tmp / "original")
    (root / "reasonix.toml").write_text(
        ORIGINAL_TOML.format(base_url=server.base_url, key_env=KEY_ENV)
    )
    home = tmp / "original-home"
    home.mkdir()
    env = _clean_env(
        {
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_CACHE_HOME": str(home / ".cache"),
            "XDG_DATA_HOME": str(home / ".local" / "share"),
            "DO_NOT_TRACK": "1",
            "REASONIX_TELEMETRY": "off",
        }
    )
    argv = [binary, "run", "--max-steps", str(steps + 10), TASK]
    return Side("original", argv, root, env)


def _run(side: Side, server: FakeDeepSeekServer, task: Handler) -> subprocess.CompletedProcess[str]:
    server.handler = task
    for old in side.root.glob("out*.txt"):
        old.unlink()
    return subprocess.run(
        side.argv,
        cwd=side.root,
        env=side.env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def run_once(side: Side, server: FakeDeepSeekServer, steps: int) -> float:
    """One run of the task; host milliseconds per step as the server saw them. Raises
    RuntimeError (with the client's last words) unless every step ran and wrote its file."""
    arrivals: list[float] = []
    task: Handler = step_task(steps)

    def handler(request: RecordedRequest) -> Reply:
        arrivals.append(time.perf_counter())
        return task(request)

    proc = _run(side, server, handler)
    written = len(list(side.root.glob("out*.txt")))
    if proc.returncode != 0 or len(arrivals) != steps + 1 or written != steps:
        raise RuntimeError(
            f"{side.name}: exit {proc.returncode}, {len(arrivals)} requests for {steps} steps, "
            f"{written} files written: {(proc.stderr or proc.stdout)[-600:]}"
        )
    return (arrivals[-1] - arrivals[0]) / steps * 1000


def confined(side: Side, server: FakeDeepSeekServer) -> bool:
    """Whether the side's bash runs in a mount namespace of its own (a sandbox), asked with one
    bash step that writes down its namespace."""

    def handler(request: RecordedRequest) -> Reply:
        if any(m.get("role") == "assistant" for m in request.messages):
            return Reply.text("Done.")
        return Reply.call("bash", {"command": "readlink /proc/self/ns/mnt > out-ns.txt"})

    proc = _run(side, server, handler)
    seen = side.root / "out-ns.txt"
    if proc.returncode != 0 or not seen.exists():
        raise RuntimeError(f"{side.name}: the probe step failed: {proc.stderr[-600:]}")
    return seen.read_text().strip() != os.readlink("/proc/self/ns/mnt")


def measure(sides: list[Side], server: FakeDeepSeekServer, steps: int, pairs: int) -> None:
    """One warm-up run each, then ``pairs`` rounds, each side once a round, the order swapped
    every round; each side's figures go to its ``per_step_ms``."""
    for side in sides:
        run_once(side, server, steps)  # warms the file cache and the client's own stores
    for round_ in range(pairs):
        for side in sides if round_ % 2 == 0 else sides[::-1]:
            side.per_step_ms.append(run_once(side, server, steps))


def _version(binary: str) -> str:
    try:
        out = subprocess.run(
            [binary, "--version"], capture_output=True, text=True, timeout=30, check=False
        )
    except OSError as exc:
        return f"unknown ({exc})"
    return (out.stdout or out.stderr).strip().splitlines()[0] if out.stdout or out.stderr else ""


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def run_original(quick: bool) -> dict[str, Any]:
    binary = os.environ.get(BIN_ENV, "")
    if not binary:
        print(f"\nPer-step ratio against the original Reasonix: {SKIPPED}")
        return {"skipped": SKIPPED}
    pairs = 2 if quick else 5
    steps = STEPS
    load_before = _load()
    with (
        tempfile.TemporaryDirectory(prefix="reasonix-bench-original-") as tmp,
        FakeDeepSeekServer() as server,
    ):
        us, them = ours(Path(tmp), server, steps), original(Path(tmp), server, binary, steps)
        sandboxed = {side.name: confined(side, server) for side in (us, them)}
        if not all(sandboxed.values()):
            raise RuntimeError(f"bash is not in a sandbox on every side: {sandboxed}")
        measure([us, them], server, steps, pairs)
    load_after = _load()
    mine, theirs = Stat.of(us.per_step_ms), Stat.of(them.per_step_ms)
    pair_ratios = Stat.of([a / b for a, b in zip(us.per_step_ms, them.per_step_ms, strict=True)])
    ratio = mine.median / theirs.median
    version = _version(binary)
    print_table(
        f"Host time per mutating bash step at the server, {steps} steps, bash in bubblewrap "
        f"on both sides (median (min-max) of {pairs} paired runs; load average "
        f"{load_before[0]} before, {load_after[0]} after)",
        [
            ["ours (reasonix run, snapshots on)", mine.fmt(digits=0), ""],
            [f"original ({version})", theirs.fmt(digits=0), ""],
            [
                "ratio ours / original",
                f"{ratio:.2f}x",
                f"per pair {pair_ratios.fmt('x', digits=2)}",
            ],
        ],
        ["", "per step", "notes"],
    )
    return {
        "steps": steps,
        "pairs": pairs,
        "original_version": version,
        "ours_ms": mine.to_dict(1),
        "original_ms": theirs.to_dict(1),
        "ratio": round(ratio, 3),
        "pair_ratios": pair_ratios.to_dict(3),
        "bash_in_own_mount_namespace": sandboxed,
        "load_before": load_before,
        "load_after": load_after,
    }
