"""``OpenAICompatProvider``: streams chat completions from DeepSeek or any OpenAI-compatible
endpoint over httpx, with retries that never repeat output the caller has already seen.

This is the only module of the provider layer that sends with httpx, and it imports httpx only
when the first request is made (about 140 ms), so building a provider costs nothing at start-up.
The request's body is built in :mod:`reasonix.providers.request_body`, what a failure becomes
is decided in :mod:`reasonix.providers.http_errors`, the retries in
:mod:`reasonix.providers.retry`, the reading of SSE in :mod:`reasonix.providers.sse`.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from contextlib import aclosing
from types import TracebackType
from typing import TYPE_CHECKING, Any

from reasonix._version import __version__
from reasonix.errors import (
    AuthenticationError,
    ConfigError,
    InsufficientBalanceError,
    MalformedChunkError,
    ProviderError,
    StreamCutError,
    TransientFinishError,
    UnknownModelError,
)
from reasonix.messages import ModelRequest, StreamEvent
from reasonix.providers.base import Provider
from reasonix.providers.http_errors import RETRY_STATUSES, HttpPhase, http_failure, status_error
from reasonix.providers.models import ModelInfo, get_model_info
from reasonix.providers.request_body import build_request_body, check_user_id, encode_body
from reasonix.providers.retry import RetryPolicy, with_retries
from reasonix.providers.sse import DONE, SSEDecoder, SSEEvent, StreamAssembler
from reasonix.providers.tls import tls_context

__all__ = ["RETRY_STATUSES", "OpenAICompatProvider", "build_request_body", "encode_body"]

#: After ``[DONE]``, how long (at most) to wait for the end of the body. Reading it lets httpx
#: return the connection to its pool (no new TCP/TLS handshake for the next request); a server
#: that keeps the body open past ``[DONE]`` only costs this much before the connection is dropped.
_DRAIN_SECONDS = 0.5
_DRAIN_BYTES = 64 * 1024


class OpenAICompatProvider:
    """A :class:`reasonix.providers.Provider` for chat-completions endpoints (DeepSeek first).

    ``base_url`` may end with or without ``/v1``; requests go to ``{base_url}/chat/completions``.
    The API key comes from ``api_key`` or else the ``api_key_env`` variable (read on the first
    request; ``api_key_env=None`` sends no key, for local servers). ``idle_timeout`` is the idle
    watchdog: no bytes at all (keep-alive comments count) for that long ends the attempt with
    :class:`~reasonix.errors.StreamIdleTimeout`.

    Failed attempts are retried (429/500/502/503/504, connection errors, streams cut, stalled
    past the idle watchdog or malformed, ``aborted`` and ``insufficient_system_resource``
    finishes) with exponential backoff and full jitter, at most ``max_retries`` times, whether or
    not output had reached the caller; a :class:`~reasonix.messages.StreamRetry` event announces
    each retry, with ``retract=True`` when the caller must discard the partial output it got.
    Use it as an async context manager or call :meth:`aclose` to release connections.
    """

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        api_key_env: str | None = "DEEPSEEK_API_KEY",
        info: ModelInfo | None = None,
        headers: Mapping[str, str] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        user_id: str | None = None,
        connect_timeout: float = 10.0,
        idle_timeout: float = 120.0,
        max_retries: int = 4,
        backoff_base: float = 0.5,
        backoff_max: float = 20.0,
        transport: httpx.AsyncBaseTransport | None = None,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    ) -> None:
        if not base_url:
            raise ConfigError("base_url is empty", key="base_url")
        self._base_url = base_url.rstrip("/")
        self._url = self._base_url + "/chat/completions"
        self._model = model
        if info is None:
            try:
                info = get_model_info(model)
            except UnknownModelError:
                info = ModelInfo(model)
        self._info = info
        self._api_key = api_key
        self._api_key_env = api_key_env
        self._headers = dict(headers or {})
        self._extra_body = dict(extra_body or {})
        self._user_id = None if user_id is None else check_user_id(user_id)
        self._connect_timeout = connect_timeout
        self._idle_timeout = idle_timeout
        self._retry = RetryPolicy(max_retries, backoff_base, backoff_max, sleep)
        self._transport = transport
        self._client: httpx.AsyncClient | None = None
        self._client_lock = threading.Lock()

    def prepare(self) -> None:
        """Build the HTTP client now (its TLS set-up costs tens of milliseconds), e.g. in a
        thread while the user types, so the first request does not wait for it."""
        self._get_client()

    # -- Provider protocol ----------------------------------------------------------------------

    @property
    def model(self) -> str:
        """The model requests go to unless ``ModelRequest.model`` overrides it."""
        return self._model

    @property
    def info(self) -> ModelInfo:
        """Limits and prices of :attr:`model` (a preset, or generic zero-price info)."""
        return self._info

    @property
    def url(self) -> str:
        """The chat-completions URL requests are posted to."""
        return self._url

    def build_request_body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body this provider sends for ``request`` (see :func:`build_request_body`)."""
        return build_request_body(
            request, model=self._model, user_id=self._user_id, extra_body=self._extra_body
        )

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Send ``request`` and yield its stream events, retrying failed attempts
        (:func:`~reasonix.providers.retry.with_retries`)."""
        content = encode_body(self.build_request_body(request))
        headers = self._request_headers()
        client = self._get_client()
        retried = with_retries(lambda: self._attempt(client, content, headers), self._retry)
        async with aclosing(retried) as events:  # type: ignore[type-var]
            async for event in events:
                yield event

    async def upload_file(
        self, data: bytes, filename: str, mime: str, purpose: str = "user_data"
    ) -> str:
        """Upload a file to the Files API (``POST {base}/files``); its ``file_id``."""
        from reasonix.providers.files import UPLOAD_TIMEOUT, files_url, upload_file

        url = files_url(self._base_url)
        return await upload_file(
            self._get_client(),
            url,
            self._request_headers(),
            data=data,
            filename=filename,
            mime=mime,
            purpose=purpose,
            policy=self._retry,
            failure=lambda exc, phase: http_failure(
                exc, phase, url=url, idle_timeout=UPLOAD_TIMEOUT
            ),
            status_error=self._status_error,
        )

    async def balance(self) -> Balance | str:
        """The account balance (``GET /user/balance``), or a short reason it is not available."""
        from reasonix.providers.balance import fetch_balance_async

        try:
            headers = self._request_headers()
        except AuthenticationError as exc:
            return str(exc)
        return await fetch_balance_async(self._base_url, None, headers, self._transport)

    # -- lifecycle ------------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Close the HTTP client and its connections (the provider can be used again later)."""
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    async def __aenter__(self) -> OpenAICompatProvider:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"OpenAICompatProvider(base_url={self._base_url!r}, model={self._model!r})"

    # -- internals ------------------------------------------------------------------------------

    def _key_source(self) -> str:
        if self._api_key:
            return "the api_key given to the provider"
        if self._api_key_env is None:
            # No key was sent: none was given and there is no variable to read one from.
            return "the provider's api_key argument (no key was sent)"
        return f"the {self._api_key_env} environment variable"

    def _request_headers(self) -> dict[str, str]:
        headers = {
            "Content-Type": "application/json",
            "Accept": "text/event-stream",
            # Compression would make a proxy or server buffer the stream; we want every byte now.
            "Accept-Encoding": "identity",
            "User-Agent": f"reasonix/{__version__}",
        }
        key = self._api_key
        if not key and self._api_key_env:
            key = os.environ.get(self._api_key_env) or None
            if key is None:
                raise AuthenticationError(
                    f"No API key for {self._base_url}: set the {self._api_key_env} environment "
                    "variable (or pass api_key=...). No request was sent.",
                    status=0,
                    code="missing_api_key",
                )
        if key:
            headers["Authorization"] = f"Bearer {key}"
        headers.update(self._headers)
        return headers

    def _get_client(self) -> httpx.AsyncClient:
        import httpx

        with self._client_lock:  # prepare() may run in another thread
            if self._client is None:
                timeout = httpx.Timeout(
                    self._idle_timeout, connect=self._connect_timeout, pool=self._connect_timeout
                )
                self._client = httpx.AsyncClient(
                    transport=self._transport,
                    timeout=timeout,
                    follow_redirects=False,
                    verify=tls_context(),
                )
            return self._client

    def _failure(self, exc: BaseException, phase: HttpPhase, detail: str = "") -> ProviderError:
        return http_failure(
            exc, phase, url=self._url, idle_timeout=self._idle_timeout, detail=detail
        )

    def _status_error(self, response: httpx.Response) -> ProviderError:
        return status_error(
            response, base_url=self._base_url, model=self._model, key_source=self._key_source()
        )

    async def _attempt(
        self, client: httpx.AsyncClient, content: bytes, headers: Mapping[str, str]
    ) -> AsyncGenerator[StreamEvent, None]:
        import httpx

        request = client.build_request("POST", self._url, content=content, headers=headers)
        try:
            response = await client.send(request, stream=True)
        except httpx.HTTPError as exc:
            raise self._failure(exc, "send") from exc
        try:
            if response.status_code >= 400:
                try:
                    await response.aread()
                except httpx.HTTPError as exc:
                    raise self._failure(exc, "error_body", str(response.status_code)) from exc
                error = self._status_error(response)
                if isinstance(error, InsufficientBalanceError):
                    await self._add_balance(error, headers)
                raise error
            content_type = response.headers.get("content-type", "")
            if content_type.startswith("application/json"):
                for event in await self._whole_completion(response):
                    yield event
                return
            async with aclosing(self._events(response)) as events:
                async for event in events:
                    yield event
        finally:
            await response.aclose()

    async def _add_balance(
        self, error: InsufficientBalanceError, headers: Mapping[str, str]
    ) -> None:
        """After a 402, say what ``GET /user/balance`` reports (best effort)."""
        from reasonix.providers.balance import Balance, fetch_balance_async

        auth = {k: v for k, v in headers.items() if k.lower() not in ("content-type", "accept")}
        balance = await fetch_balance_async(self._base_url, None, auth, self._transport)
        if isinstance(balance, Balance):
            error.args = (f"{error} Balance now: {balance.describe()}.",)

    async def _whole_completion(self, response: httpx.Response) -> list[StreamEvent]:
        """A server that ignored ``stream: true``: read one JSON completion instead."""
        import httpx

        try:
            raw = await response.aread()
        except httpx.HTTPError as exc:
            raise self._failure(exc, "body") from exc
        try:
            # DeepSeek sends blank lines while a non-streamed request is queued; json skips them.
            completion = json.loads(raw)
        except ValueError as exc:
            raise MalformedChunkError(
                f"the server answered with invalid JSON: {raw[:200]!r}"
            ) from exc
        if not isinstance(completion, Mapping):
            raise MalformedChunkError(f"the server answered with {type(completion).__name__}")
        assembler = StreamAssembler()
        return [*assembler.feed_completion(completion), *assembler.finish()]

    async def _events(self, response: httpx.Response) -> AsyncGenerator[StreamEvent, None]:
        import httpx

        decoder = SSEDecoder()
        assembler = StreamAssembler()
        chunks = response.aiter_bytes()
        cut_after_finish = False
        try:
            ended = False
            while not ended:
                try:
                    # Our own watchdog as well as httpx's read timeout, so it also holds for
                    # custom transports that do no socket reads.
                    async with asyncio.timeout(self._idle_timeout):
                        raw = await anext(chunks)
                except StopAsyncIteration:
                    ended = True
                    break
                except (TimeoutError, httpx.ReadTimeout) as exc:
                    raise self._failure(exc, "stream", f"{assembler.chunks} chunk(s)") from exc
                except httpx.HTTPError as exc:
                    if assembler.finish_reason is not None and assembler.usage is not None:
                        # The answer and its usage arrived whole; only the [DONE] line went
                        # with the connection. Discarding a complete answer would turn a
                        # harmless cut into a failed turn (its output was already shown).
                        cut_after_finish = True
                        break
                    raise self._failure(exc, "stream", f"{assembler.chunks} chunk(s)") from exc
                events = decoder.feed(raw)
                for n, sse in enumerate(events):
                    try:
                        produced = assembler.feed(sse)
                    except TransientFinishError:
                        # Read on to [DONE] (bounded) so the kept-alive connection goes back
                        # to the pool: the retry then needs no new TCP/TLS handshake, at the
                        # moment the server is short of capacity.
                        await self._drain_to_done(decoder, chunks, events[n + 1 :])
                        raise
                    for event in produced:
                        yield event
                    if assembler.done:
                        # Stop decoding at [DONE]; what follows is drained below, bounded,
                        # as a server may keep the body open after it.
                        break
                ended = assembler.done
            if assembler.done:
                await self._drain(chunks)
            if not assembler.done and not cut_after_finish:
                for sse in decoder.close():
                    for event in assembler.feed(sse):
                        yield event
            if assembler.chunks == 0 and not assembler.done:
                if decoder.comments:
                    # DeepSeek keeps a queued request alive with comments and closes it when
                    # inference has not started after about 10 minutes.
                    raise StreamCutError(
                        f"the stream from {self._url} sent {decoder.comments} keep-alive "
                        "comment(s) and then closed without an answer (the server was too busy "
                        "to start it)"
                    )
                kind = response.headers.get("content-type", "no content type")
                raise StreamCutError(
                    f"the response from {self._url} ({kind}) held no chat-completion chunks; "
                    "is base_url an OpenAI-compatible endpoint?"
                )
            for event in assembler.finish():
                yield event
        finally:
            await chunks.aclose()  # type: ignore[attr-defined]

    async def _drain_to_done(
        self, decoder: SSEDecoder, chunks: AsyncIterator[bytes], pending: list[SSEEvent]
    ) -> None:
        """After a retryable finish: skip to ``[DONE]`` and the end of the body, within the same
        bounds as :meth:`_drain`; give up quietly (the connection is then not reused)."""
        import httpx

        def has_done(events: list[SSEEvent]) -> bool:
            return any(e.data.strip() == DONE for e in events)

        read = 0
        try:
            async with asyncio.timeout(min(self._idle_timeout, _DRAIN_SECONDS)):
                while not has_done(pending):
                    raw = await anext(chunks, None)
                    if raw is None:
                        return
                    read += len(raw)
                    if read > _DRAIN_BYTES:
                        return
                    pending = decoder.feed(raw)
        except (TimeoutError, httpx.HTTPError):
            return
        await self._drain(chunks)

    async def _drain(self, chunks: AsyncIterator[bytes]) -> None:
        """Read what follows ``[DONE]`` (normally just the end of the chunked body, already on
        its way) so the connection can be reused; give up quietly after a short grace."""
        import httpx

        drained = 0
        try:
            async with asyncio.timeout(min(self._idle_timeout, _DRAIN_SECONDS)):
                async for raw in chunks:
                    drained += len(raw)
                    if drained > _DRAIN_BYTES:
                        return
        except (TimeoutError, httpx.HTTPError):
            pass  # the answer is complete; the connection is simply not reused


if TYPE_CHECKING:
    import httpx

    from reasonix.providers.balance import Balance

    def _is_a_provider(p: OpenAICompatProvider) -> Provider:
        return p  # mypy proves the class satisfies the Provider protocol
