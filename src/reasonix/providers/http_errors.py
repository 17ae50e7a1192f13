"""How an HTTP failure becomes our error: the one place for it in the provider layer.

Two kinds of failure reach a chat-completions client. An error *status* (the server answered
4xx/5xx) becomes an :class:`~reasonix.errors.APIStatusError` subclass by
:func:`status_error`, whose message says what to do (check the key, top up, slow down) and
whose ``retryable`` flag is set from the exact status (:data:`RETRY_STATUSES`), with the
server's ``Retry-After`` hint kept on it. An httpx *exception* (no connection, a timeout, a cut
body) becomes a connection, cut-stream or idle-timeout error by :func:`http_failure`, by the
phase of the request in which it happened.

Nothing here sends anything; httpx is imported only to tell its exception classes apart, and
only when a failure is mapped.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal
from urllib.parse import urlsplit

from reasonix.errors import (
    APIStatusError,
    AuthenticationError,
    BadRequestError,
    InsufficientBalanceError,
    InvalidParametersError,
    ProviderConnectionError,
    ProviderError,
    RateLimitError,
    ServerError,
    StreamCutError,
    StreamIdleTimeout,
)

if TYPE_CHECKING:
    import httpx

__all__ = [
    "DEEPSEEK_TOP_UP_URL",
    "RETRY_STATUSES",
    "HttpPhase",
    "http_failure",
    "retry_after",
    "status_error",
]

#: HTTP statuses worth another attempt.
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})

DEEPSEEK_TOP_UP_URL = "https://platform.deepseek.com/top_up"

#: When in a request an httpx exception happened: sending it and waiting for the head
#: (``send``), reading an error status's body (``error_body``), reading a whole JSON completion
#: (``body``) or reading the SSE stream (``stream``).
HttpPhase = Literal["send", "error_body", "body", "stream"]


def http_failure(
    exc: BaseException, phase: HttpPhase, *, url: str, idle_timeout: float, detail: str = ""
) -> ProviderError:
    """The :class:`~reasonix.errors.ProviderError` for an httpx exception (or our idle
    watchdog's ``TimeoutError``) in ``phase`` (:data:`HttpPhase`); ``detail`` is the status for
    ``error_body`` and how far the stream got for ``stream``."""
    import httpx

    silent = isinstance(exc, TimeoutError | httpx.ReadTimeout)
    if phase == "send":
        if isinstance(exc, httpx.ReadTimeout):
            return StreamIdleTimeout(f"no response from {url} within {idle_timeout:g}s")
        if isinstance(exc, httpx.TimeoutException):
            return ProviderConnectionError(f"timed out connecting to {url} ({type(exc).__name__})")
        return ProviderConnectionError(f"could not reach {url}: {type(exc).__name__}: {exc}")
    if phase == "error_body":
        return ProviderConnectionError(
            f"HTTP {detail} from {url}, and the error body could not be read: {exc}"
        )
    if phase == "body":
        if silent:
            return StreamIdleTimeout(f"the response from {url} went silent for {idle_timeout:g}s")
        return StreamCutError(f"the response from {url} broke: {exc}")
    if silent:
        return StreamIdleTimeout(
            f"the stream from {url} went silent for {idle_timeout:g}s after {detail}"
        )
    return StreamCutError(
        f"the stream from {url} broke after {detail}: {type(exc).__name__}: {exc}"
    )


def status_error(
    response: httpx.Response, *, base_url: str, model: str, key_source: str
) -> APIStatusError:
    """The error for an error status whose body has been read. ``key_source`` says where the
    key came from (for a 401); ``base_url`` and ``model`` decide where a 402 sends the user to
    top up."""
    status = response.status_code
    message, code = _server_message(response)
    body = response.text[:2000]
    host = urlsplit(base_url).hostname or base_url
    detail = f"HTTP {status} from {host}: {message}"
    error: APIStatusError
    if status == 400:
        error = BadRequestError(f"Bad request ({detail})", status=status, body=body, code=code)
    elif status == 401:
        error = AuthenticationError(
            f"The API key was refused ({detail}). Check the key in {key_source}.",
            status=status,
            body=body,
            code=code,
        )
    elif status == 402:
        if host.endswith("deepseek.com") or model.startswith("deepseek"):
            where = f"top up your balance at {DEEPSEEK_TOP_UP_URL}"
        else:
            where = f"top up your balance with the provider ({host})"
        error = InsufficientBalanceError(
            f"Insufficient balance ({detail}): {where}.", status=status, body=body, code=code
        )
    elif status == 422:
        error = InvalidParametersError(
            f"Invalid parameters ({detail})", status=status, body=body, code=code
        )
    elif status == 429:
        error = RateLimitError(
            f"Rate limited: too many concurrent requests ({detail})",
            status=status,
            body=body,
            code=code,
        )
    elif status >= 500:
        error = ServerError(f"Server error ({detail})", status=status, body=body, code=code)
    else:
        hint = " Check base_url and the model name." if status == 404 else ""
        error = APIStatusError(
            f"Request failed ({detail}).{hint}", status=status, body=body, code=code
        )
    # The class says what a status usually means; the retry decision is by exact status.
    error.retryable = status in RETRY_STATUSES
    error.retry_after = retry_after(response)
    return error


def retry_after(response: httpx.Response) -> float | None:
    """The server's ``Retry-After`` in seconds, when it gave a number."""
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        return None  # an HTTP date: rare for these APIs, fall back to our own backoff


def _server_message(response: httpx.Response) -> tuple[str, str | None]:
    """The error message and code from an (OpenAI-shaped) error body, or the raw text."""
    text = response.text.strip()
    try:
        data = json.loads(text)
    except ValueError:
        return (text[:500] or response.reason_phrase or "no details"), None
    error = data.get("error", data) if isinstance(data, Mapping) else data
    if isinstance(error, Mapping):
        message = error.get("message") or error.get("detail") or text[:500]
        code = error.get("code") or error.get("type")
        return str(message), None if code is None else str(code)
    return str(error)[:500], None
