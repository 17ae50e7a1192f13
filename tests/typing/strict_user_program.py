"""A small program written the way a library user writes one, type-checked with
``mypy --strict`` by ``tests/test_public_api.py``; each ``reveal_type`` must show a real type.

It is never run by the suite (the provider points at a closed port)."""

from __future__ import annotations

from pathlib import Path
from typing import reveal_type

from reasonix import (
    AgentSession,
    Controller,
    OpenAICompatProvider,
    Options,
    ReasonixError,
    SessionStore,
    TextDeltaEvent,
    ToolRegistry,
    load_config,
    tool,
)
from reasonix.tools.builtin import default_registry


@tool
def shout(text: str) -> str:
    """Upper-case the text."""
    return text.upper()


@tool(read_only=True, category="read")
def count(text: str) -> int:
    """Count the characters of the text."""
    return len(text)


async def library(workdir: Path) -> int:
    flash = OpenAICompatProvider(
        base_url="http://127.0.0.1:9", model="deepseek-v4-flash", api_key="sk-none"
    )
    registry = default_registry(workdir).with_tools([shout, count])
    ctrl = Controller(Options(executor_provider=flash, tool_registry=registry))
    try:
        result = await ctrl.run_turn("Say hello.")
    except ReasonixError as exc:
        reveal_type(exc)
        return 1
    finally:
        await ctrl.aclose()
    reveal_type(ctrl)
    reveal_type(shout)
    reveal_type(count)
    reveal_type(result)
    reveal_type(result.stop_reason)
    reveal_type(ctrl.executor.session.snapshot())
    return 0 if result.ok else 1


async def seed(workdir: Path) -> None:
    """DESIGN.md's example, as written: with a planner provider, ``ctrl.planner`` is an Agent."""
    flash = OpenAICompatProvider(
        base_url="http://127.0.0.1:9", model="deepseek-v4-flash", api_key="sk-none"
    )
    pro = OpenAICompatProvider(
        base_url="http://127.0.0.1:9", model="deepseek-v4-pro", api_key="sk-none"
    )
    ctrl = Controller(
        Options(
            executor_provider=flash,
            planner_provider=pro,
            tool_registry=ToolRegistry.default(workdir),
        )
    )
    await ctrl.run_turn("Analyze this dataset, generate visualizations, and write the report.")
    print(len(ctrl.executor.session.snapshot()), len(ctrl.planner.session.snapshot()))
    reveal_type(ctrl.planner)
    alone = Controller(Options(executor_provider=flash))
    reveal_type(alone.planner)


async def frontend(workdir: Path) -> str:
    config = load_config(workdir)
    with SessionStore(workdir / "sessions.db") as store:
        session = await AgentSession.open(config, workdir, store=store, remote_approvals=True)
        try:
            turn = session.start_turn("Fix the failing test.")
            text = ""
            async for event in turn:
                reveal_type(event)
                if isinstance(event, TextDeltaEvent):
                    text += event.text
            outcome = await turn.result()
            reveal_type(session)
            reveal_type(turn)
            reveal_type(outcome)
            reveal_type(outcome.result)
            reveal_type(session.usage.cost())
            return text
        finally:
            await session.aclose()
