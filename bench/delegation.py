"""Delegation: the cost of a survey delegated to three read-only ``task`` children against the
same survey done inline by the parent, and the cache efficiency of the children's chains.

The workspace holds three modules of about 12 KB each. Delegated: the parent issues three
``task`` calls in one step; each child (its own session and cache chain) greps, reads its
module and reports a short summary; the parent answers from the three reports. Inline: the
parent reads the three modules itself and answers. Both then take the same number of further
steps in the same conversation (small tool calls, as a session goes on; 0, 10 and 40 of them),
because the difference delegation makes is what the parent's conversation carries from then
on: three summaries instead of three files, resent (cached, but paid) on every later request,
against the children's own cold starts (each child's system prompt and tools are a new
chain).

Models are scripted; HTTP, SSE, sessions, tools, the delegator and the cache accounting of
the fake server (real prefix matching) are the real code paths. Costs use the flash list price
(the children run on the executor's model), off-peak.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

from bench.cache import analyse
from bench.common import print_table, verdict
from reasonix.agent import AgentOptions
from reasonix.control import Controller, Options, OrchestratorOptions
from reasonix.control.delegation import SUBAGENT_PROMPT, DelegationLimits
from reasonix.events import CollectingSink, UsageEvent, UsageSource
from reasonix.messages import Usage
from reasonix.providers.models import PRESETS, price_usage
from reasonix.providers.openai_compat import OpenAICompatProvider
from reasonix.testing import FakeDeepSeekServer, Reply
from reasonix.testing.fake_server import RecordedRequest
from reasonix.tools.registry import ToolRegistry

MODEL = "deepseek-flash"
UNIT_TOKENS = 64
MODULES = ("parser", "render", "store")
FOLLOW_UPS = (0, 10, 40)


def _module(name: str) -> str:
    body = [f'"""The {name} module: helpers of the survey benchmark."""', ""]
    for i in range(120):
        body += [
            f"def {name}_step_{i}(value: int) -> int:",
            f'    """Step {i} of the {name} pipeline: scale, shift and clamp ``value``."""',
            f"    return max(0, min(10_000, value * {i + 2} - {i}))",
            "",
        ]
    return "\n".join(body)


def _summary(name: str) -> str:
    return (
        f"{name}.py: 120 pure functions {name}_step_0..119, each scaling, shifting and clamping "
        "an int to 0..10000; no I/O, no imports, no state."
    )


def _steps(request: RecordedRequest) -> int:
    return sum(1 for m in request.messages if m.get("role") == "assistant")


def _child(request: RecordedRequest) -> str | None:
    messages = request.messages
    if not messages or messages[0].get("content") != SUBAGENT_PROMPT:
        return None
    prompt = str(messages[1].get("content", ""))
    return next((m for m in MODULES if f"pkg/{m}.py" in prompt), "?")


def _follow_up(n: int) -> Reply:
    return Reply.call("glob", {"pattern": f"pkg/*{n % 3}*"}, reasoning="Check the layout.")


def _handler(delegated: bool, follow_ups: int) -> Any:
    def reply(request: RecordedRequest) -> Reply:
        steps = _steps(request)
        module = _child(request)
        if module is not None:
            if steps == 0:
                return Reply.call("grep", {"pattern": "def ", "path": f"pkg/{module}.py"})
            if steps == 1:
                return Reply.call("read_file", {"path": f"pkg/{module}.py"})
            return Reply.text(_summary(module), reasoning="Summarise.")
        if steps == 0:
            if delegated:
                return Reply.calls(
                    *(
                        (
                            "task",
                            {
                                "description": f"survey {m}",
                                "prompt": f"Read pkg/{m}.py and summarise what it defines.",
                            },
                        )
                        for m in MODULES
                    ),
                    reasoning="Delegate the survey.",
                )
            return Reply.calls(
                *(("read_file", {"path": f"pkg/{m}.py"}) for m in MODULES), reasoning="Read all."
            )
        if steps <= follow_ups:
            return _follow_up(steps)
        return Reply.text(" ".join(_summary(m) for m in MODULES))

    return reply


async def _run(
    workdir: Path, delegated: bool, follow_ups: int
) -> tuple[list[UsageEvent], list[RecordedRequest]]:
    sink = CollectingSink()
    handler = _handler(delegated, follow_ups)
    with FakeDeepSeekServer(handler=handler, unit_tokens=UNIT_TOKENS) as server:
        provider = OpenAICompatProvider(
            base_url=server.base_url, model=MODEL, api_key="sk-bench", info=PRESETS[MODEL]
        )
        ctrl = Controller(
            Options(
                executor_provider=provider,
                tool_registry=ToolRegistry.default(workdir),
                executor_options=AgentOptions(workspace=workdir, max_steps=max(FOLLOW_UPS) + 5),
                sink=sink,
                # the follow-ups repeat cheap calls on purpose: not a stall to stop on
                orchestration=OrchestratorOptions(stall_rounds=10_000, repeat_failures=10_000),
                delegation=DelegationLimits(max_parallel=3) if delegated else None,
            )
        )
        async with ctrl:
            await ctrl.run_turn("Survey pkg/: what does each module define?", plan=False)
        requests = list(server.requests)
    return [e for e in sink.events if isinstance(e, UsageEvent)], requests


def _total(events: list[UsageEvent], source: UsageSource | None = None) -> Usage:
    total = Usage()
    for e in events:
        if source is None or e.source == source:
            total = total + e.usage
    return total


def _price(events: list[UsageEvent], source: UsageSource) -> tuple[Usage, float]:
    usage = _total(events, source)
    return usage, price_usage(usage, PRESETS[MODEL].prices)


def run_delegation(quick: bool) -> dict[str, Any]:
    counts = FOLLOW_UPS[:2] if quick else FOLLOW_UPS
    runs: dict[int, dict[str, Any]] = {}
    chain_requests: list[RecordedRequest] = []
    with tempfile.TemporaryDirectory(prefix="reasonix-bench-delegation-") as tmp:
        root = Path(tmp)
        (root / "pkg").mkdir()
        for m in MODULES:
            (root / "pkg" / f"{m}.py").write_text(_module(m))
        for n in counts:
            delegated_events, delegated_requests = asyncio.run(_run(root, True, n))
            inline_events, _ = asyncio.run(_run(root, False, n))
            parent, parent_cost = _price(delegated_events, UsageSource.EXECUTOR)
            children, children_cost = _price(delegated_events, UsageSource.SUBAGENT)
            inline, inline_cost = _price(inline_events, UsageSource.EXECUTOR)
            runs[n] = {
                "delegated": {
                    "parent": {**parent.to_dict(), "cost_usd": round(parent_cost, 8)},
                    "children": {**children.to_dict(), "cost_usd": round(children_cost, 8)},
                    "total_usd": round(parent_cost + children_cost, 8),
                },
                "inline": {**inline.to_dict(), "cost_usd": round(inline_cost, 8)},
                "delegated_over_inline": round((parent_cost + children_cost) / inline_cost, 4),
            }
            chain_requests = delegated_requests
    rows = []
    for n, r in runs.items():
        d, i = r["delegated"], r["inline"]
        rows.append(
            [n, d["parent"]["prompt_tokens"], d["children"]["prompt_tokens"],
             f"{d['parent']['cost_usd']:.6f}", f"{d['children']['cost_usd']:.6f}",
             f"{d['total_usd']:.6f}", i["prompt_tokens"], f"{i['cost_usd']:.6f}",
             f"{r['delegated_over_inline']:.0%}"]
        )  # fmt: skip
    print_table(
        f"Delegated survey (parent + {len(MODULES)} read-only children) vs the same survey "
        f"inline, then N more parent steps ({MODEL} list price, USD)",
        rows,
        ["N", "parent in", "children in", "parent $", "children $", "delegated $",
         "inline in", "inline $", "deleg/inline"],
    )  # fmt: skip

    chains: dict[str, Any] = {}
    chain_rows = []
    for module in MODULES:
        c = analyse([r for r in chain_requests if _child(r) == module], UNIT_TOKENS)
        chains[module] = {
            "requests": c.requests,
            "prompt_tokens": c.prompt_tokens,
            "cache_hit_tokens": c.hit_tokens,
            "measured_hit_tokens": c.measured_hits,
            "ideal_hit_tokens": c.ideal_hits,
            "hit_over_ideal": round(c.ratio, 6),
        }
        chain_rows.append(
            [module, c.requests, c.prompt_tokens, c.measured_hits, c.ideal_hits,
             f"{c.ratio:.2%}", verdict(c.ratio >= 1.0)]
        )  # fmt: skip
    parent_chain = analyse([r for r in chain_requests if _child(r) is None], UNIT_TOKENS)
    chain_rows.append(
        ["(parent)", parent_chain.requests, parent_chain.prompt_tokens,
         parent_chain.measured_hits, parent_chain.ideal_hits, f"{parent_chain.ratio:.2%}",
         verdict(parent_chain.ratio >= 1.0)]
    )  # fmt: skip
    print_table(
        "Cache efficiency of the child chains, hits / pure-append ideal (each chain's first "
        "request is its planned cold point, left out)",
        chain_rows,
        ["chain", "reqs", "prompt", "hits", "ideal", "hits/ideal", "target 100%"],
    )
    return {
        "model": MODEL,
        "modules": len(MODULES),
        "by_follow_ups": {str(n): r for n, r in runs.items()},
        "child_chains": chains,
        "parent_chain_hit_over_ideal": round(parent_chain.ratio, 6),
        "chains_target_met": all(v["hit_over_ideal"] >= 1.0 for v in chains.values()),
    }
