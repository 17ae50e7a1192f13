"""Peak RSS over a long session: ``steps`` executor steps with the real provider over loopback
HTTP (the fake server runs in another process), thinking on, ~0.5 KB tool results. The session
runs in a child process so the figure is that session's alone."""

from __future__ import annotations

import asyncio
import json
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.common import print_table, verdict


def _rss_mb() -> float:
    """Peak RSS of this process so far. VmHWM belongs to this process's own address space;
    ``ru_maxrss`` would also carry the parent's peak across fork+exec on Linux."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


async def _session(base_url: str, steps: int) -> dict[str, Any]:
    from bench.overhead import _agent
    from reasonix.providers.openai_compat import OpenAICompatProvider
    from reasonix.tools.registry import ToolRegistry

    ToolRegistry.default(".")  # load the built-in tools too, as a real session does
    start = _rss_mb()
    async with OpenAICompatProvider(
        base_url=base_url, model="deepseek-flash", api_key="sk-bench", max_retries=0
    ) as provider:
        agent = _agent(provider, 2, steps)
        result = await agent.run("go")
    return {
        "steps": result.steps,
        "stop_reason": result.stop_reason,
        "messages": len(agent.session),
        "rss_after_imports_mb": round(start, 1),
        "peak_rss_mb": round(_rss_mb(), 1),
    }


def child(base_url: str, steps: int) -> None:
    print(json.dumps(asyncio.run(_session(base_url, steps))))


def run_memory(quick: bool) -> dict[str, Any]:
    from bench.overhead import ServerProcess

    steps = 100 if quick else 500
    # coarse simulated tokens: the server's own cache simulation stays cheap; not measured here
    server = ServerProcess(chars_per_token=64)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "bench.memory", server.base_url, str(steps)],
            capture_output=True,
            text=True,
            check=True,
            timeout=600,
            cwd=Path(__file__).resolve().parents[1],
        )
    finally:
        server.close()
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    out["target_mb"] = 150
    out["target_met"] = out["peak_rss_mb"] < 150 and out["steps"] == steps
    print_table(
        f"Memory: one {steps}-step session in a child process (real provider over loopback)",
        [
            [
                out["steps"],
                out["messages"],
                f"{out['rss_after_imports_mb']} MB",
                f"{out['peak_rss_mb']} MB",
                f"< 150 MB: {verdict(out['target_met'])}",
            ]
        ],
        ["steps", "messages", "RSS after imports", "peak RSS", "target"],
    )
    return out


if __name__ == "__main__":
    child(sys.argv[1], int(sys.argv[2]))
