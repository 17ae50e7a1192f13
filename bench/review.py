"""Auto mode's reviewer: what it costs per approval and per session, next to the executor.

One session in ``auto`` mode: the executor makes N writing calls (file writes and small shell
commands, each of which would ask in ``ask`` mode), with a read between them; every one goes
to the reviewer, which allows it with a one-line reason. The reviewer is its own role on its
own server (its own session and cache chain), as ``[review] provider`` would put it; both
run on the flash list price, off-peak. Models are scripted; HTTP, SSE, the permission engine,
the reviewer's session and the fake server's prefix-cache accounting are the real code paths.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

from bench.cache import analyse
from bench.common import print_table, verdict
from reasonix.agent import AgentOptions
from reasonix.control import Controller, Options, OrchestratorOptions
from reasonix.events import CollectingSink, UsageEvent, UsageSource
from reasonix.messages import Usage
from reasonix.providers.models import PRESETS, price_usage
from reasonix.providers.openai_compat import OpenAICompatProvider
from reasonix.safety.permissions import PermissionEngine
from reasonix.testing import FakeDeepSeekServer, Reply
from reasonix.testing.fake_server import RecordedRequest
from reasonix.tools.registry import ToolRegistry

MODEL = "deepseek-flash"
UNIT_TOKENS = 64
APPROVALS = (10, 30)


def _executor(approvals: int) -> Any:
    def reply(request: RecordedRequest) -> Reply:
        steps = sum(1 for m in request.messages if m.get("role") == "assistant")
        if steps >= 2 * approvals:
            return Reply.text("All files are in place.")
        n = steps // 2
        if steps % 2:
            return Reply.call("read_file", {"path": f"out/f{n}.txt"}, reasoning="Check it.")
        if n % 3 == 2:
            return Reply.call("bash", {"command": f"mkdir -p out && touch out/f{n}.txt"})
        body = "".join(f"line {i} of file {n}\n" for i in range(30))
        return Reply.call(
            "write_file", {"path": f"out/f{n}.txt", "content": body}, reasoning="Write it."
        )

    return reply


def _reviewer(request: RecordedRequest) -> Reply:
    return Reply.call(
        "verdict",
        {"decision": "allow", "reason": "writes inside the project, as the user asked"},
        reasoning="It serves the request.",
    )


def _provider(server: FakeDeepSeekServer) -> OpenAICompatProvider:
    return OpenAICompatProvider(
        base_url=server.base_url, model=MODEL, api_key="sk-bench", info=PRESETS[MODEL]
    )


async def _run(
    workdir: Path, approvals: int
) -> tuple[list[UsageEvent], list[RecordedRequest], int]:
    sink = CollectingSink()
    with (
        FakeDeepSeekServer(handler=_executor(approvals), unit_tokens=UNIT_TOKENS) as ex,
        FakeDeepSeekServer(handler=_reviewer, unit_tokens=UNIT_TOKENS) as rv,
    ):
        engine = PermissionEngine(mode="auto", approver=None)
        registry = ToolRegistry.default(workdir, policy=engine)
        options = AgentOptions(workspace=workdir, max_steps=2 * approvals + 5)
        ctrl = Controller(
            Options(
                executor_provider=_provider(ex),
                tool_registry=registry,
                executor_options=options,
                sink=sink,
                orchestration=OrchestratorOptions(stall_rounds=10_000, repeat_failures=10_000),
                reviewer_provider=_provider(rv),
                reviewer_options=AgentOptions(workspace=workdir, reasoning_effort="low"),
            )
        )
        engine.reviewer = ctrl.reviewer
        async with ctrl:
            await ctrl.run_turn(f"Write the {approvals} files under out/.", plan=False)
        assert ctrl.reviewer is not None
        allowed = sum(1 for r in ctrl.reviewer.records if r.decision == "allow")
        return [e for e in sink.events if isinstance(e, UsageEvent)], list(rv.requests), allowed


def _priced(events: list[UsageEvent], source: UsageSource) -> tuple[int, Usage, float]:
    mine = [e for e in events if e.source == source]
    total = Usage()
    for e in mine:
        total = total + e.usage
    return len(mine), total, price_usage(total, PRESETS[MODEL].prices)


def run_review(quick: bool) -> dict[str, Any]:
    counts = APPROVALS[:1] if quick else APPROVALS
    out: dict[str, Any] = {"model": MODEL, "sessions": {}}
    rows = []
    chain_rows = []
    for n in counts:
        with tempfile.TemporaryDirectory(prefix="reasonix-bench-review-") as tmp:
            events, reviewer_requests, allowed = asyncio.run(_run(Path(tmp), n))
            written = len(list((Path(tmp) / "out").glob("f*.txt")))
        ex_reqs, ex_usage, ex_cost = _priced(events, UsageSource.EXECUTOR)
        rv_reqs, rv_usage, rv_cost = _priced(events, UsageSource.REVIEWER)
        chain = analyse(reviewer_requests, UNIT_TOKENS)
        figures = {
            "approvals": n,
            "allowed": allowed,
            "files_written": written,
            "executor": {"requests": ex_reqs, **ex_usage.to_dict(), "cost_usd": round(ex_cost, 8)},
            "reviewer": {"requests": rv_reqs, **rv_usage.to_dict(), "cost_usd": round(rv_cost, 8)},
            "reviewer_usd_per_approval": round(rv_cost / max(allowed, 1), 8),
            "executor_usd_per_step": round(ex_cost / max(ex_reqs, 1), 8),
            "reviewer_share_of_session": round(rv_cost / (ex_cost + rv_cost), 4),
            "reviewer_hit_over_ideal": round(chain.ratio, 6),
        }
        out["sessions"][str(n)] = figures
        rows.append(
            [n, allowed, ex_reqs, f"{ex_cost:.6f}", f"{figures['executor_usd_per_step']:.6f}",
             rv_reqs, f"{rv_cost:.6f}", f"{figures['reviewer_usd_per_approval']:.6f}",
             f"{rv_usage.hit_ratio:.0%}", f"{figures['reviewer_share_of_session']:.0%}"]
        )  # fmt: skip
        chain_rows.append(
            [n, chain.requests, chain.prompt_tokens, chain.measured_hits, chain.ideal_hits,
             f"{chain.ratio:.2%}", verdict(chain.ratio >= 1.0)]
        )  # fmt: skip
    print_table(
        f"Auto mode: reviewer cost per approval and per session next to the executor's "
        f"({MODEL} list price, USD)",
        rows,
        ["approvals", "allowed", "exec reqs", "exec $", "exec $/step", "review reqs",
         "review $", "review $/approval", "review hit%", "review share"],
    )  # fmt: skip
    print_table(
        "The reviewer's chain, hits / pure-append ideal (its first request is its cold point)",
        chain_rows,
        ["approvals", "reqs", "prompt", "hits", "ideal", "hits/ideal", "target 100%"],
    )
    out["chain_target_met"] = all(
        s["reviewer_hit_over_ideal"] >= 1.0 for s in out["sessions"].values()
    )
    json.dumps(out)  # plain data only
    return out
