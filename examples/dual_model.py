"""The seed example: the executor on DeepSeek flash, the planner on DeepSeek pro, one turn that
plans, then the two sessions' sizes and the cost per role.

With DEEPSEEK_API_KEY set it talks to DeepSeek. Without it, it runs offline against two
FakeDeepSeekServers (one per role, with different model names and prices) that play a
*scripted* model — the machinery is real (HTTP, SSE, tools, plan merge, evidence checks); the
model's words are not.

    python examples/dual_model.py [workdir]
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from contextlib import AsyncExitStack
from pathlib import Path

from reasonix.agent import AgentOptions
from reasonix.control import Controller, Options
from reasonix.providers.models import get_model_info
from reasonix.providers.openai_compat import OpenAICompatProvider
from reasonix.testing import FakeDeepSeekServer, Reply
from reasonix.tools.builtin import default_registry

TASK = "Analyze this dataset, generate visualizations, and write the report."

DATA = "city,temp\nOslo,4\nLima,19\nCairo,27\nPerth,22\n"

ANALYZE = """\
import csv

rows = list(csv.DictReader(open("data.csv")))
temps = {r["city"]: float(r["temp"]) for r in rows}
width = 300
bars = "".join(
    f'<rect x="0" y="{i * 22}" width="{t / max(temps.values()) * width:.0f}" height="18"/>'
    f'<text x="4" y="{i * 22 + 14}" fill="white">{c}</text>'
    for i, (c, t) in enumerate(temps.items())
)
open("chart.svg", "w").write(f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" '
                             f'height="{22 * len(temps)}">{bars}</svg>')
mean = sum(temps.values()) / len(temps)
print(f"cities={len(temps)} mean={mean:.1f} max={max(temps, key=temps.get)}")
"""


def planner_script() -> list[Reply]:
    return [
        Reply.call("read_file", {"path": "data.csv"}),
        Reply.call(
            "submit_plan",
            {
                "objective": "Summarise the temperatures in data.csv with a chart and a report.",
                "steps": [
                    {
                        "title": "Write analyze.py that computes stats and draws chart.svg",
                        "files": ["data.csv"],
                        "acceptance": "chart.svg exists and stats are printed",
                        "verify": "python3 analyze.py",
                    },
                    {
                        "title": "Write report.md with the findings and the chart",
                        "files": [],
                        "acceptance": "report.md links chart.svg",
                        "verify": "grep -q chart.svg report.md",
                    },
                ],
                "risks": ["the CSV could hold non-numeric temperatures"],
            },
        ),
    ]


def executor_script() -> list[Reply]:
    report = (
        "# Temperature report\n\nFour cities; mean 18.0 °C; Cairo is the warmest.\n\n"
        "![chart](chart.svg)\n"
    )
    return [
        Reply.call("write_file", {"path": "analyze.py", "content": ANALYZE}),
        Reply.call("bash", {"command": "python3 analyze.py"}),
        Reply.call("complete_step", {"step": "1", "evidence": "python3 analyze.py printed stats"}),
        Reply.call("write_file", {"path": "report.md", "content": report}),
        Reply.call("bash", {"command": "grep -q chart.svg report.md"}),
        Reply.call("complete_step", {"step": "2", "evidence": "report.md links chart.svg"}),
        Reply.text("Done: analyze.py, chart.svg and report.md are in the workspace."),
    ]


async def main(workdir: Path) -> None:
    (workdir / "data.csv").write_text(DATA)
    async with AsyncExitStack() as stack:
        if os.environ.get("DEEPSEEK_API_KEY"):
            base = "https://api.deepseek.com"
            flash = OpenAICompatProvider(base_url=base, model="deepseek-flash")
            pro = OpenAICompatProvider(base_url=base, model="deepseek-v4-pro")
        else:
            print("No DEEPSEEK_API_KEY: running offline against a scripted fake DeepSeek server.")
            ex = await stack.enter_async_context(
                FakeDeepSeekServer(executor_script(), models=["deepseek-flash"])
            )
            pl = await stack.enter_async_context(
                FakeDeepSeekServer(planner_script(), models=["deepseek-v4-pro"])
            )
            flash = OpenAICompatProvider(
                base_url=ex.base_url,
                model="deepseek-flash",
                api_key="offline",
                info=get_model_info("deepseek-flash"),
            )
            pro = OpenAICompatProvider(
                base_url=pl.base_url,
                model="deepseek-v4-pro",
                api_key="offline",
                info=get_model_info("deepseek-v4-pro"),
            )
        ctrl = Controller(
            Options(
                executor_provider=flash,
                planner_provider=pro,
                tool_registry=default_registry(workdir),
                executor_options=AgentOptions(workspace=workdir),
            )
        )
        stack.push_async_callback(ctrl.aclose)
        result = await ctrl.run_turn(TASK)
        print(f"route: {result.route}; stop: {result.stop_reason}")
        print(result.text)
        print(len(ctrl.executor.session.snapshot()), len(ctrl.planner.session.snapshot()))  # type: ignore[union-attr]
        print(ctrl.cost_table())


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="reasonix-"))
    asyncio.run(main(target))
