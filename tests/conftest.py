from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from reasonix.providers.models import ModelInfo, Prices
from reasonix.providers.openai_compat import OpenAICompatProvider
from reasonix.store import SessionStore
from reasonix.testing import FakeDeepSeekServer
from reasonix.testing.fake_server import RecordedRequest


def wire_prefix_violations(requests: list[RecordedRequest]) -> list[str]:
    """Every request's serialised messages must be a byte-exact prefix of the next one's, and
    the tool schemas identical. Returns what broke (empty = invariant holds)."""
    problems = []
    for i in range(1, len(requests)):
        prev, cur = requests[i - 1].body, requests[i].body
        prev_msgs = [json.dumps(m, sort_keys=False) for m in prev["messages"]]
        cur_msgs = [json.dumps(m, sort_keys=False) for m in cur["messages"]]
        if cur_msgs[: len(prev_msgs)] != prev_msgs:
            problems.append(f"request {i} is not a prefix extension of request {i - 1}")
        if json.dumps(prev.get("tools")) != json.dumps(cur.get("tools")):
            problems.append(f"tool schemas changed at request {i}")
    return problems


@pytest.fixture
async def make_provider() -> AsyncIterator[Callable[..., OpenAICompatProvider]]:
    made: list[OpenAICompatProvider] = []

    def make(
        server: FakeDeepSeekServer,
        model: str = "deepseek-v4-flash",
        prices: Prices | None = None,
        **kwargs: Any,
    ) -> OpenAICompatProvider:
        info = ModelInfo(model, prices=prices) if prices is not None else None
        kwargs.setdefault("max_retries", 2)
        provider = OpenAICompatProvider(
            base_url=server.base_url,
            model=model,
            api_key="sk-test",
            info=info,
            **kwargs,
        )
        made.append(provider)
        return provider

    yield make
    for provider in made:
        await provider.aclose()


@pytest.fixture
async def servers() -> AsyncIterator[tuple[FakeDeepSeekServer, FakeDeepSeekServer]]:
    """(executor server, planner server)."""
    async with FakeDeepSeekServer() as ex, FakeDeepSeekServer() as pl:
        yield ex, pl


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SessionStore]:
    """A session store in the test's temp folder (``data/sessions.db``), closed afterwards."""
    with SessionStore(tmp_path / "data" / "sessions.db") as opened:
        yield opened


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """The fault-injection suite's tally: tests/test_faults_*.py record ("faults", (injected,
    survived)) in their user_properties; add them up at the end of the run."""
    injected = survived = 0
    for reports in terminalreporter.stats.values():
        for report in reports:
            if getattr(report, "when", None) != "call":
                continue
            for name, value in getattr(report, "user_properties", ()):
                if name == "faults":
                    injected += value[0]
                    survived += value[1]
    if injected:
        terminalreporter.write_line(f"faults injected: {injected}, survived: {survived}")
