"""``reasonix demo``: one offline dual-model turn with scripted models (see
:mod:`reasonix.app.demo`)."""

from __future__ import annotations

import argparse
import asyncio
import shutil
import tempfile
from pathlib import Path

from rich.console import Console
from rich.panel import Panel

from reasonix.app import demo
from reasonix.cli.commands import EXIT_FAILURE, EXIT_OK
from reasonix.cli.render import TerminalRenderer
from reasonix.control.cost import format_cost_table
from reasonix.store import SessionStore
from reasonix.testing.fake_server import FakeDeepSeekServer


def run_demo(args: argparse.Namespace) -> int:
    console = Console(highlight=False)
    folder = Path(tempfile.mkdtemp(prefix="reasonix-demo-"))
    root = folder / "project"
    console.print(
        Panel(
            "This is a [bold]scripted demo[/bold]: both models are fake servers on this machine "
            "replaying a fixed script, so it runs offline and costs nothing.\nThe tools, "
            "permissions, orchestration, session store and cost accounting are the real ones.\n"
            f"Project: {root}",
            title="reasonix demo",
            border_style="magenta",
        )
    )
    try:
        return asyncio.run(_run(console, folder, root))
    finally:
        if args.keep:
            console.print(f"Kept the demo project in {root}")
        else:
            shutil.rmtree(folder, ignore_errors=True)


async def _run(console: Console, folder: Path, root: Path) -> int:
    renderer = TerminalRenderer(console)
    renderer.set_models({"executor": "deepseek-flash", "planner": "deepseek-v4-pro"})
    store = SessionStore(folder / "data" / "sessions.db")
    try:
        async with (
            FakeDeepSeekServer(demo.executor_script()) as ex,
            FakeDeepSeekServer(demo.planner_script()) as pl,
        ):
            console.print(f"[bold]task:[/bold] {demo.TASK}")
            outcome = await demo.run_scenario(
                root, store, renderer, executor_url=ex.base_url, planner_url=pl.base_url
            )
            renderer.finish()
    finally:
        store.close()
    result = outcome.result
    console.print()
    console.print("[bold]Cost per role[/bold] (DeepSeek list prices, simulated tokens):")
    console.print(format_cost_table(result.cost_by_role), markup=False, highlight=False)
    fixed = "return a + b" in (root / "calc.py").read_text(encoding="utf-8")
    if result.ok and fixed:
        console.print(
            f"[green]Demo finished:[/green] route {result.route}, the test passes. "
            "Run `reasonix` in your own project to use real models."
        )
        return EXIT_OK
    console.print(
        f"[red]Demo did not finish as scripted:[/red] {result.stop_reason}: {result.text}"
    )
    return EXIT_FAILURE
