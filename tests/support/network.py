"""No test touches the internet: a guard on httpx's own transports that refuses, and records,
any request the test process makes to an address that is not loopback (model traffic goes to
``FakeDeepSeekServer`` on 127.0.0.1). ``tests/conftest.py`` puts it around every test."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["OffLoopbackRequest", "expect_refusals", "is_loopback", "loopback_only", "unguarded"]


class OffLoopbackRequest(AssertionError):
    """A test tried to reach a host that is not loopback."""


def is_loopback(host: str) -> bool:
    """``localhost``, 127.0.0.0/8 and ``::1`` (a name is never resolved: only these count)."""
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


#: for each open guard: httpx's own send methods it replaced, and the list it records into
_originals: list[tuple[Any, Any, list[str]]] = []


@contextmanager
def expect_refusals() -> Iterator[list[str]]:
    """For a test of the guard itself: the refusals made inside are moved into the list this
    yields, so the autouse guard does not fail the test for them."""
    seen: list[str] = []
    record = _originals[-1][2] if _originals else []
    start = len(record)
    try:
        yield seen
    finally:
        seen.extend(record[start:])
        del record[start:]


@contextmanager
def unguarded() -> Iterator[None]:
    """The guard switched off inside a test (for the control that proves it matters)."""
    import httpx

    if not _originals:
        yield
        return
    guarded = (httpx.HTTPTransport.handle_request, httpx.AsyncHTTPTransport.handle_async_request)
    sync_send, async_send, _ = _originals[-1]
    httpx.HTTPTransport.handle_request = sync_send  # type: ignore[method-assign]
    httpx.AsyncHTTPTransport.handle_async_request = async_send  # type: ignore[method-assign]
    try:
        yield
    finally:
        httpx.HTTPTransport.handle_request = guarded[0]  # type: ignore[method-assign]
        httpx.AsyncHTTPTransport.handle_async_request = guarded[1]  # type: ignore[method-assign]


@contextmanager
def loopback_only(refused: list[str]) -> Iterator[None]:
    """While open, httpx's HTTP transports refuse requests off loopback; each refused URL is
    appended to ``refused`` (so a test that swallows the error still fails)."""
    import httpx

    sync_send = httpx.HTTPTransport.handle_request
    async_send = httpx.AsyncHTTPTransport.handle_async_request

    def check(request: httpx.Request) -> None:
        if not is_loopback(request.url.host):
            refused.append(str(request.url))
            raise OffLoopbackRequest(
                f"a test sent a request to {request.url.host} ({request.url}): tests must use "
                "FakeDeepSeekServer or another server on loopback"
            )

    def guarded_sync(self: httpx.HTTPTransport, request: httpx.Request) -> Any:
        check(request)
        return sync_send(self, request)

    async def guarded_async(self: httpx.AsyncHTTPTransport, request: httpx.Request) -> Any:
        check(request)
        return await async_send(self, request)

    httpx.HTTPTransport.handle_request = guarded_sync  # type: ignore[method-assign]
    httpx.AsyncHTTPTransport.handle_async_request = guarded_async  # type: ignore[method-assign]
    _originals.append((sync_send, async_send, refused))
    try:
        yield
    finally:
        _originals.pop()
        httpx.HTTPTransport.handle_request = sync_send  # type: ignore[method-assign]
        httpx.AsyncHTTPTransport.handle_async_request = async_send  # type: ignore[method-assign]
