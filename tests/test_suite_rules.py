"""Rules of the test suite itself: no request leaves loopback (the autouse guard trips, and
the control shows the request is really attempted without it), a test that runs too long
fails instead of hanging, and no test module imports another test module."""

from __future__ import annotations

import ast
import contextlib
import time
from pathlib import Path

import httpx
import pytest

from reasonix.errors import ProviderError
from reasonix.messages import ModelRequest, UserMessage
from reasonix.providers.openai_compat import OpenAICompatProvider
from tests.support.network import (
    OffLoopbackRequest,
    expect_refusals,
    is_loopback,
    loopback_only,
    unguarded,
)
from tests.support.timeout import TestTimedOut, time_limit

TESTS = Path(__file__).parent
#: TEST-NET-1 (RFC 5737): never routed, so the control's attempt fails fast and harmlessly.
OFF_LOOPBACK = "http://192.0.2.1:9"


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("api.deepseek.com", False),
        ("192.0.2.1", False),
        ("10.0.0.1", False),
        ("0.0.0.0", False),
        ("localhost.example.com", False),
    ],
)
def test_loopback_addresses(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


async def stream_once(timeout: float = 0.5) -> None:
    provider = OpenAICompatProvider(
        base_url=OFF_LOOPBACK,
        model="deepseek-flash",
        api_key="sk-test",
        max_retries=0,
        connect_timeout=timeout,
    )
    try:
        async for _ in provider.stream(ModelRequest(messages=(UserMessage("hi"),))):
            pass
    finally:
        await provider.aclose()


async def test_the_autouse_guard_refuses_a_provider_request_off_loopback() -> None:
    with expect_refusals() as refused, pytest.raises(OffLoopbackRequest, match=r"192\.0\.2\.1"):
        await stream_once()
    assert refused == [OFF_LOOPBACK + "/chat/completions"]


def test_the_guard_refuses_plain_httpx_too() -> None:
    with expect_refusals() as refused, httpx.Client() as client, pytest.raises(OffLoopbackRequest):
        client.get("http://example.com/")
    assert refused == ["http://example.com/"]


def test_a_swallowed_refusal_still_fails_the_test() -> None:
    """Code under test may catch the refusal (web_fetch turns errors into tool results): the
    guard's record is what fails the test then."""
    refused: list[str] = []
    with (
        loopback_only(refused),
        httpx.Client() as client,
        contextlib.suppress(OffLoopbackRequest),
    ):
        client.get("http://api.deepseek.com/")
    assert refused == ["http://api.deepseek.com/"]


async def test_control_without_the_guard_the_request_is_attempted() -> None:
    with unguarded(), pytest.raises(ProviderError) as caught:
        await stream_once(timeout=0.3)
    assert not isinstance(caught.value.__cause__, OffLoopbackRequest)


def spin() -> None:
    while True:
        time.sleep(0.01)


def test_a_test_past_its_time_limit_fails() -> None:
    with time_limit(0.2, "a looping test"), pytest.raises(TestTimedOut, match="a looping test"):
        spin()


def test_no_test_module_imports_another_test_module() -> None:
    offenders = []
    for path in sorted(TESTS.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for name in names:
                parts = name.split(".")
                if parts[0] == "tests" and (
                    parts[-1].startswith("test_") or parts[-1] == "conftest"
                ):
                    offenders.append(f"{path.relative_to(TESTS)} imports {name}")
    assert offenders == [], "move shared helpers to tests/support/: " + "; ".join(offenders)
