from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from reasonix.providers.models import ModelInfo, Prices
from reasonix.providers.openai_compat import OpenAICompatProvider
from reasonix.store import SessionStore
from reasonix.testing import FakeDeepSeekServer
from tests.support.network import loopback_only
from tests.support.timeout import limit_seconds, time_limit

# pytest-xdist's workers export COLUMNS=80 and LINES=24. The apps we start in a pseudo-terminal
# would take those over the terminal's own size (rich and prompt_toolkit read them first), so a
# test that sizes its terminal wide would see lines wrapped at 80 only when the suite runs in
# parallel. A user's shell does not export them; neither do we.
for _name in ("COLUMNS", "LINES"):
    os.environ.pop(_name, None)


@pytest.fixture(autouse=True)
def _loopback_only(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every test: no request of the test process leaves loopback (tests/support/network.py);
    one that tried fails even if the code under test swallowed the refusal."""
    refused: list[str] = []
    with loopback_only(refused):
        yield
    if refused:
        pytest.fail(f"requests off loopback were refused: {refused}", pytrace=False)


@pytest.fixture(autouse=True)
def _time_limit(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every test: a time limit (tests/support/timeout.py), so a loop fails instead of hanging."""
    with time_limit(limit_seconds(), request.node.nodeid):
        yield


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
