"""Harness overhead per model step: the CPU reasonix itself spends per step (building the
request, streaming events, prefix tracking, dispatching tools, appending results, accounting),
with a zero-latency model and a trivial tool, at several history lengths.

Two measurements:

- in-process: a :class:`ScriptedProvider` answers instantly (usage given, so it does no work of
  its own); the figure is the Agent loop alone.
- loopback: the real :class:`OpenAICompatProvider` against a FakeDeepSeekServer running in a
  *separate process*, so this process's CPU time is the client's: request encoding, HTTP, SSE
  parsing, stream assembly, plus the loop. Wall time there also includes the server's work.

Bytes sent per request are reported next to the times: the work per step that grows with
history is serialising what is sent, so time per step should grow no faster than the bytes.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import Stat, print_table, verdict
from reasonix.agent import Agent, AgentOptions, Session
from reasonix.messages import (
    AssistantMessage,
    Message,
    ModelRequest,
    SystemMessage,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
)
from reasonix.providers.openai_compat import build_request_body, encode_body
from reasonix.testing import Reply, ScriptedProvider
from reasonix.tools.registry import Tool, ToolRegistry

TOOL_OUTPUT = (
    "src/app/handlers.py:41:    def handle(self, request):  # route by path\n"
    "src/app/handlers.py:42:        return self.routes[request.path](request)\n"
) * 4  # ~500 characters: a typical grep/read result
SIZES_FULL = (10, 100, 200, 1000)
SIZES_QUICK = (10, 200)


async def _noop(i: int) -> str:
    """Return a fixed result (the tool's own run time is not what is measured)."""
    return TOOL_OUTPUT


noop = Tool.from_function(_noop, name="noop", read_only=True)


def history(n: int) -> list[Message]:
    """A valid session of ``n`` messages: system, user, then tool-call steps."""
    msgs: list[Message] = [
        SystemMessage("You are a coding agent. " * 20),
        UserMessage("Find where requests are routed and explain it. " * 3),
    ]
    k = 0
    while len(msgs) + 2 <= n:
        call = ToolCall(f"call_00_hist{k:020d}", "noop", json.dumps({"i": 100_000 + k}))
        msgs.append(
            AssistantMessage(
                content="",
                reasoning_content=f"Step {k}: look at the next handler to see how it routes.",
                tool_calls=(call,),
            )
        )
        msgs.append(ToolMessage(call.id, TOOL_OUTPUT, name="noop"))
        k += 1
    return msgs


def _replies(steps: int) -> list[Reply]:
    usage = Usage(1000, 900, 100, 20, 5)
    return [
        Reply(
            reasoning="Next one.",
            tool_calls=Reply.call("noop", {"i": i}).tool_calls,
            usage=usage,
        )
        for i in range(steps)
    ]


def _agent(provider: Any, n: int, steps: int) -> Agent:
    return Agent(
        provider,
        ToolRegistry([noop]),
        Session("bench", history(n)),
        AgentOptions(max_steps=steps, compaction_threshold=None, repeat_limit=10**6),
    )


def _bytes_sent(request: ModelRequest) -> int:
    return len(encode_body(build_request_body(request, model=request.model or "m")))


async def _measure_inprocess(n: int, steps: int) -> tuple[float, float, int]:
    provider = ScriptedProvider(_replies(steps))
    agent = _agent(provider, n, steps)
    gc.collect()
    c0, w0 = time.process_time(), time.perf_counter()
    result = await agent.run(None)
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    assert result.steps == steps and result.stop_reason == "step_limit", result
    return cpu / steps * 1000, wall / steps * 1000, _bytes_sent(provider.requests[0])


# -- loopback ------------------------------------------------------------------------------------

SERVER_CODE = """
import itertools, sys
from reasonix.testing import FakeDeepSeekServer, Reply
n = itertools.count()
def handler(request):
    return Reply.call("noop", {"i": next(n)}, reasoning="Next one.")
with FakeDeepSeekServer(handler=handler, chars_per_token=int(sys.argv[1])) as srv:
    print(srv.port, flush=True)
    sys.stdin.read()
"""


class ServerProcess:
    """A FakeDeepSeekServer in a child process (its CPU is not this process's)."""

    def __init__(self, chars_per_token: int = 4) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", SERVER_CODE, str(chars_per_token)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")},
        )
        assert self.proc.stdout is not None
        self.base_url = f"http://127.0.0.1:{int(self.proc.stdout.readline())}"

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=10)


async def _measure_loopback(
    base_url: str, n: int, steps: int, runs: int
) -> list[tuple[float, float, int]]:
    """``runs`` measurements with one provider, after a warm-up run: creating the HTTP client
    (its TLS context is built even for http://, ~30 ms) is a once-per-process cost, not a
    per-step one."""
    from reasonix.providers.openai_compat import OpenAICompatProvider

    samples = []
    async with OpenAICompatProvider(
        base_url=base_url, model="deepseek-flash", api_key="sk-bench", max_retries=0
    ) as provider:
        for i in range(runs + 1):
            agent = _agent(provider, n, steps)
            sent = _bytes_sent(agent.build_request())
            gc.collect()
            c0, w0 = time.process_time(), time.perf_counter()
            result = await agent.run(None)
            cpu, wall = time.process_time() - c0, time.perf_counter() - w0
            assert result.steps == steps and result.stop_reason == "step_limit", result
            if i:
                samples.append((cpu / steps * 1000, wall / steps * 1000, sent))
    return samples


def run_overhead(quick: bool) -> dict[str, Any]:
    sizes = SIZES_QUICK if quick else SIZES_FULL
    steps, runs = (5, 3) if quick else (10, 9)
    out: dict[str, Any] = {"steps_per_run": steps, "runs": runs, "in_process": {}, "loopback": {}}
    rows = []
    for n in sizes:
        asyncio.run(_measure_inprocess(n, steps))  # warm-up (imports, caches)
        samples = [asyncio.run(_measure_inprocess(n, steps)) for _ in range(runs)]
        cpu, wall = Stat.of([s[0] for s in samples]), Stat.of([s[1] for s in samples])
        sent = samples[-1][2]
        out["in_process"][str(n)] = {
            "cpu_ms_per_step": cpu.to_dict(4),
            "wall_ms_per_step": wall.to_dict(4),
            "bytes_sent_per_request": sent,
        }
        rows.append(
            [
                n,
                cpu.fmt(digits=3),
                wall.fmt(digits=3),
                f"{sent / 1024:.1f} KiB",
                f"{cpu.median / (sent / 1024) * 1000:.1f}",
            ]
        )
    at200 = out["in_process"].get("200", {}).get("cpu_ms_per_step", {}).get("median")
    out["target_ms_at_200"] = 2.0
    out["target_met"] = at200 is not None and at200 < 2.0
    print_table(
        f"Harness overhead per model step, in-process scripted model ({steps} steps x {runs} "
        f"runs; median (min-max)); target < 2 ms at 200 messages: {verdict(out['target_met'])}",
        rows,
        ["history msgs", "CPU/step", "wall/step", "bytes sent/request", "CPU µs per KiB sent"],
    )

    rows = []
    server = ServerProcess()
    try:
        lb_runs = max(3, runs // 3)
        for n in sizes:
            samples = asyncio.run(_measure_loopback(server.base_url, n, steps, lb_runs))
            cpu, wall = Stat.of([s[0] for s in samples]), Stat.of([s[1] for s in samples])
            sent = samples[-1][2]
            out["loopback"][str(n)] = {
                "client_cpu_ms_per_step": cpu.to_dict(4),
                "wall_ms_per_step": wall.to_dict(4),
                "bytes_sent_per_request": sent,
                "runs": lb_runs,
            }
            rows.append(
                [
                    n,
                    cpu.fmt(digits=2),
                    wall.fmt(digits=2),
                    f"{sent / 1024:.1f} KiB",
                    f"{cpu.median / (sent / 1024) * 1000:.1f}",
                ]
            )
    finally:
        server.close()
    print_table(
        "Per step over loopback HTTP with the real provider (fake server in another process; "
        "client CPU includes HTTP, JSON, SSE parsing; wall includes the server)",
        rows,
        [
            "history msgs",
            "client CPU/step",
            "wall/step",
            "bytes sent/request",
            "CPU µs per KiB sent",
        ],
    )
    return out
