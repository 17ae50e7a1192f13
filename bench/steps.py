"""Host time per step through the real CLI: ``reasonix run`` against a fake server that answers
at once, with ``STEPS`` mutating ``bash`` steps (each writes a file), with and without the
sandbox (bubblewrap: the kept sandbox, and a fresh one per call with ``REASONIX_SANDBOX=per-call``)
and snapshots. Per step = (a run with ``STEPS`` steps - a run with none)
/ ``STEPS``, medians of paired runs, so start-up and the final answer cancel out. Then one
``bash`` call alone, in process (``ShellTool.run_command``, rounds interleaved): in the kept
sandbox, in a fresh sandbox per call, and unconfined."""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import print_table
from reasonix.testing import FakeDeepSeekServer, Reply
from reasonix.testing.fake_server import RecordedRequest
from reasonix.testing.project import fake_project_toml

STEPS = 20
KEY_ENV = "REASONIX_BENCH_KEY"
CASES = (
    ("sandbox + snapshots", "auto", True),
    ("sandbox per call + snapshots", "per-call", True),
    ("sandbox, no snapshots", "auto", False),
    ("no sandbox, snapshots", "off", True),
    ("no sandbox, no snapshots", "off", False),
)


def _handler(steps: int) -> Any:
    def handler(request: RecordedRequest) -> Reply:
        done = sum(1 for m in request.messages if m.get("role") == "assistant")
        if done < steps:
            return Reply.call("bash", {"command": f"echo {done} > out{done}.txt"})
        return Reply.text("Done.")

    return handler


def _run(root: Path, env: dict[str, str], steps: int, server: FakeDeepSeekServer) -> float:
    server.handler = _handler(steps)
    for f in root.glob("out*.txt"):
        f.unlink()
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "reasonix", "run", "--no-planner", "--yes", "write the files"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    took = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"reasonix run failed: {proc.stderr[-500:]}")
    return took


def _bash_calls(rounds: int) -> dict[str, float]:
    """Median milliseconds of one mutating ``bash`` call, kept sandbox / per call / none."""
    import asyncio

    from reasonix.config.schema import SandboxConfig
    from reasonix.safety.confinement import confinement_for
    from reasonix.tools.builtin.shell import ShellOptions, ShellTool

    confiner = confinement_for(SandboxConfig(bash="bwrap")).confiner
    if confiner.name != "bwrap":
        return {}
    with tempfile.TemporaryDirectory(prefix="reasonix-bench-bash-") as tmp:
        ws = Path(tmp)
        tools = {
            "kept sandbox": ShellTool(ws, options=ShellOptions(confiner=confiner)),
            "sandbox per call": ShellTool(
                ws, options=ShellOptions(confiner=confiner, kept_sandbox=False)
            ),
            "unconfined": ShellTool(ws, options=ShellOptions()),
        }
        times: dict[str, list[float]] = {name: [] for name in tools}

        async def go() -> None:
            for tool in tools.values():
                await tool.run_command("true")
            for i in range(rounds):
                for name, tool in tools.items():
                    t0 = time.perf_counter()
                    await tool.run_command(f"echo {i} > out.txt")
                    times[name].append((time.perf_counter() - t0) * 1000)

        try:
            asyncio.run(go())
        finally:
            for tool in tools.values():
                tool.close()
    return {name: round(statistics.median(v), 1) for name, v in times.items()}


def run_steps(quick: bool) -> dict[str, Any]:
    pairs = 2 if quick else 5
    out: dict[str, Any] = {"steps": STEPS, "pairs": pairs}
    tmp = Path(tempfile.mkdtemp(prefix="reasonix-bench-steps-"))
    try:
        with FakeDeepSeekServer() as server:
            setups: list[tuple[str, Path, dict[str, str]]] = []
            for name, sandbox, snapshots in CASES:
                mode = "auto" if sandbox == "per-call" else sandbox
                root = tmp / name.replace(" ", "-").replace(",", "").replace("+", "and")
                root.mkdir()
                for i in range(50):
                    (root / f"src{i}.py").write_text(f"x = {i}\n")
                cfg = tmp / f"cfg-{root.name}"
                cfg.mkdir()
                (cfg / "config.toml").write_text(
                    fake_project_toml(server.base_url, server.base_url, key_env=KEY_ENV)
                    + f'\n[permissions]\nmode = "yolo"\n[sandbox]\nbash = "{mode}"\n'
                    + "allow_unconfined = true\n"
                    + f"[checkpoints]\nenabled = {'true' if snapshots else 'false'}\n"
                )
                env = {
                    k: v
                    for k, v in os.environ.items()
                    if not k.startswith(("REASONIX_", "DEEPSEEK_"))
                }
                env.update(
                    {
                        KEY_ENV: "sk-bench",
                        "REASONIX_CONFIG_DIR": str(cfg),
                        "REASONIX_DATA_DIR": str(tmp / f"data-{root.name}"),
                    }
                )
                if sandbox == "per-call":
                    env["REASONIX_SANDBOX"] = "per-call"
                _run(root, env, 1, server)  # warm the file cache
                setups.append((name, root, env))
            # Paired and interleaved: each round runs every case once (in a rotating order), so
            # a load change on a shared machine hits all cases alike.
            per_step: dict[str, list[float]] = {name: [] for name, _, _ in setups}
            for round_ in range(pairs):
                shift = round_ % len(setups)
                for name, root, env in setups[shift:] + setups[:shift]:
                    base = _run(root, env, 0, server)
                    full = _run(root, env, STEPS, server)
                    per_step[name].append((full - base) / STEPS * 1000)
            for name, values in per_step.items():
                out[name] = round(statistics.median(values), 1)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    plain = out["no sandbox, no snapshots"]
    out["ratio sandbox + snapshots / plain"] = round(out["sandbox + snapshots"] / plain, 2)
    print_table(
        f"Host time per mutating bash step through `reasonix run` (median of {pairs} paired, "
        f"interleaved runs of {STEPS} steps against an instant fake model)",
        [
            [name, f"{out[name]} ms", f"+{out[name] - plain:.1f} ms", f"{out[name] / plain:.2f}x"]
            for name, _, _ in CASES
        ],
        ["", "per step", "over no sandbox, no snapshots", "ratio"],
    )
    rounds = 10 if quick else 40
    calls = _bash_calls(rounds)
    if calls:
        out["bash_call_ms"] = calls
        bare = calls["unconfined"]
        print_table(
            f"One mutating bash call in process (median of {rounds} interleaved rounds)",
            [[name, f"{ms} ms", f"+{ms - bare:.1f} ms"] for name, ms in calls.items()],
            ["", "per call", "over unconfined"],
        )
    return out
