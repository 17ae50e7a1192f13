"""A faithful fake of DeepSeek's chat-completions endpoint, served over real HTTP on loopback.

Use it to test a client (reasonix's own provider, the ``openai`` SDK, plain ``httpx``) against
the wire format DeepSeek actually speaks, without the internet::

    with FakeDeepSeekServer([Reply.text("hi", reasoning="think")]) as srv:
        client = OpenAI(base_url=srv.base_url, api_key="sk-test", max_retries=0)
        ...
        srv.assert_exhausted()

What it models:

- SSE framing (``data: <json>`` events, ``: keep-alive`` comments, ``data: [DONE]``), the first
  ``role`` chunk, ``reasoning_content`` deltas before ``content``, tool-call fragments, usage on
  the finishing chunk (or, with ``usage_style="openai"``, on a separate ``choices: []`` chunk);
- non-streamed ``chat.completion`` objects;
- usage with ``prompt_cache_hit_tokens`` / ``prompt_cache_miss_tokens`` computed by a prefix-cache
  simulator (:class:`~reasonix.testing.prefix_cache.PrefixCache`) over a deterministic
  tokenisation of the request (see :func:`render_prompt`);
- the request validation DeepSeek performs (roles, tool names, tool answers, the
  ``reasoning_content`` rule of thinking mode, ``tool_choice`` in thinking mode, models, auth);
- images (:func:`~reasonix.testing.deepseek_rules.validate_images`): parts only in user and
  tool messages and only for image models (``/models`` says which), the documented limits, and
  image tokens by the rule of :func:`reasonix.images.image_tokens`;
- the Files API (:mod:`reasonix.testing.fake_files`, :attr:`FakeDeepSeekServer.files`): image
  uploads with the documented form and limits, the file object, listing, deletion, expiry, and
  ``file`` parts in chat requests only for a known id;
- ``POST /v1/tools/search`` with deterministic results (:func:`default_search_results`), the
  query and count limits, injected error statuses (:attr:`FakeDeepSeekServer.search_faults`)
  and a record of which searches are billed (:class:`RecordedSearch`);
- injected faults (:class:`~reasonix.testing.script.Fault`): error statuses, keep-alives, cut
  connections, stalls, a malformed chunk, ``insufficient_system_resource``.

Responses use HTTP/1.1 chunked transfer encoding and keep the connection alive, as the real
service does, so a client that reads each body to its end reuses its connection (the client's
port of each request is in :attr:`RecordedRequest.client_port`); ``keep_alive=False`` answers
with ``Connection: close`` instead. A cut connection surfaces in the client as an incomplete
chunked body, and the connection is closed after it.

The parts live beside it: the request rules in :mod:`reasonix.testing.deepseek_rules`, the
tokenisation the cache figures come from in :mod:`reasonix.testing.tokens`, the writing of one
answer in :mod:`reasonix.testing.answer_wire`, the cache itself in
:mod:`reasonix.testing.prefix_cache`. This module is what is left, and it runs past 500 lines
because it is one unit: the server object's scripting surface (script, handler, records, the
checks a test makes), the HTTP handler threads and the per-model caches all share one lock and
one request record, and the fault writer must stop at byte offsets computed while answering.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal

from reasonix.messages import Usage
from reasonix.testing.answer_wire import Answer, UsageStyle, compact, place_fault, wire_usage
from reasonix.testing.deepseek_rules import (
    AUTH_FAILED,
    LISTED_MODELS,
    REASONING_MUST_BE_PASSED,
    Rejection,
    bad_request,
    effective_effort,
    model_entry,
    thinking_enabled,
    validate_request,
)
from reasonix.testing.fake_files import FILE_PATHS, FakeFiles, is_files_path
from reasonix.testing.prefix_cache import PrefixCache
from reasonix.testing.script import Fault, Reply
from reasonix.testing.tokens import (
    count_tokens,
    render_message,
    render_prompt,
    tokenize,
)

__all__ = [
    "REASONING_MUST_BE_PASSED",
    "FakeDeepSeekServer",
    "RecordedRequest",
    "RecordedSearch",
    "default_search_results",
    "effective_effort",
    "render_message",
    "render_prompt",
    "tokenize",
]

#: ``units``: whole stored units (see PrefixCache); ``measured``: the 2026-09 fit on
#: deepseek-flash, ``cached = 128 * max(0, floor(n / 128) - 1)`` for a fully matched prefix.
CacheFormula = Literal["units", "measured"]

_PATHS = frozenset({"/chat/completions", "/v1/chat/completions"})
_MODELS_PATHS = frozenset({"/models", "/v1/models"})
_BALANCE_PATHS = frozenset({"/user/balance", "/v1/user/balance"})
_SEARCH_PATHS = frozenset({"/v1/tools/search", "/tools/search"})
#: the documented limits of one search request (third-party, see the reference)
SEARCH_QUERY_MAX = 128
SEARCH_COUNT_MAX = 50
SEARCH_COUNT_DEFAULT = 10
SearchResults = Callable[[str, int], list[dict[str, Any]]]


def default_search_results(query: str, count: int) -> list[dict[str, Any]]:
    """Deterministic results for a query: the same query gives the same results."""
    import hashlib

    digest = hashlib.sha256(query.encode()).hexdigest()[:10]
    return [
        {
            "title": f"Result {k} for {query}",
            "url": f"https://example.com/{digest}/{k}",
            "snippet": f"A snippet of result {k} about {query}.",
            "summary": f"Result {k} explains {query} in a few sentences. " * 4,
            "content": "",
            "date": f"2026-11-{k:02d}",
            "site_name": "example.com",
            "rerank_score": 2.0,
            "authority": 2,
        }
        for k in range(1, count + 1)
    ]


@dataclass
class RecordedSearch:
    """One ``POST /v1/tools/search``: its body, status, result count and whether it is billed
    (DeepSeek bills successful searches; empty results and errors are free, per the
    reference's third-party probes)."""

    body: dict[str, Any]
    status: int
    results: int = 0
    error: str | None = None

    @property
    def billed(self) -> bool:
        return self.status == 200 and self.results > 0


DEFAULT_BALANCE: Mapping[str, Any] = {
    "is_available": True,
    "balance_infos": [
        {
            "currency": "USD",
            "total_balance": "110.00",
            "granted_balance": "10.00",
            "topped_up_balance": "100.00",
        }
    ],
}

#: DeepSeek-like default messages for injected error statuses.
STATUS_MESSAGES: Mapping[int, tuple[str, str]] = {
    400: ("Invalid request", "invalid_request_error"),
    401: ("Authentication Fails, Your api key is invalid", "authentication_error"),
    402: ("Insufficient Balance", "insufficient_balance"),
    422: ("Invalid Parameters", "invalid_request_error"),
    429: ("Rate Limit Reached", "rate_limit_error"),
    500: ("Server Error", "server_error"),
    503: ("Server Overloaded", "server_error"),
}


# ---------------------------------------------------------------------------------------------
# Records


@dataclass
class RecordedRequest:
    """One request the server received, and what it answered.

    ``body`` is the parsed JSON body (``{}`` when it was not valid JSON; see ``raw_body``).
    ``headers`` has lower-cased names. ``usage`` is the usage the server reported (None when the
    request was rejected or faulted). ``prompt_tokens`` is the simulated token length of the
    request; ``stored_tokens_after_output`` the length of its input plus its generated output as
    the next request of a pure-append client would replay it.
    """

    index: int
    path: str
    headers: dict[str, str]
    raw_body: bytes
    body: dict[str, Any] = field(default_factory=dict)
    status: int = 200
    error: str | None = None
    reply: Reply | None = None
    usage: Usage | None = None
    prompt_tokens: int | None = None
    cache_hit_tokens: int | None = None
    stored_tokens_after_output: int | None = None
    #: the client's TCP port: equal ports on two requests mean one reused connection
    client_port: int | None = None
    #: the model the answer named (the requested one unless ``answer_model`` says otherwise)
    answered_model: str | None = None

    @property
    def messages(self) -> list[dict[str, Any]]:
        msgs = self.body.get("messages")
        return list(msgs) if isinstance(msgs, list) else []

    @property
    def model(self) -> str | None:
        model = self.body.get("model")
        return model if isinstance(model, str) else None

    @property
    def stream(self) -> bool:
        return self.body.get("stream") is True

    @property
    def thinking(self) -> bool:
        """Thinking mode as the server understood it (on unless explicitly disabled)."""
        return thinking_enabled(self.body)


class _Cut(Exception):
    """The injected fault closes the connection here."""


class _BodyWriter:
    """Writes a chunked body, applying the byte-offset faults (stall, cut)."""

    def __init__(self, wfile: Any, fault: Fault | None, stop: threading.Event) -> None:
        self._wfile = wfile
        self._stop = stop
        self.sent = 0
        self._cut_at = fault.cut_after_bytes if fault else None
        self._stall_at: int | None = None
        self._stall_for = 0.0
        if fault and fault.stall_seconds > 0:
            self._stall_at = max(0, fault.stall_after_bytes)
            self._stall_for = fault.stall_seconds

    def _emit(self, data: bytes) -> None:
        self._wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def write(self, data: bytes) -> None:
        while True:
            limit = len(data)
            if self._stall_at is not None:
                limit = min(limit, self._stall_at - self.sent)
            if self._cut_at is not None:
                limit = min(limit, self._cut_at - self.sent)
            if limit > 0:
                self._emit(data[:limit])
                self.sent += limit
                data = data[limit:]
            if self._stall_at is not None and self.sent >= self._stall_at:
                self._stall_at = None
                self._stop.wait(self._stall_for)  # the server's shutdown ends a stall early
            if self._cut_at is not None and self.sent >= self._cut_at:
                raise _Cut
            if not data:
                return

    def finish(self) -> None:
        self._wfile.write(b"0\r\n\r\n")


# ---------------------------------------------------------------------------------------------
# HTTP plumbing


class _HTTPServer(ThreadingHTTPServer):
    # join handler threads on close so nothing outlives the fake (no stray sockets or warnings)
    daemon_threads = False
    block_on_close = True
    # the default backlog of 5 makes bursts of concurrent clients wait for SYN retries (~1 s)
    request_queue_size = 128
    fake: FakeDeepSeekServer

    def track(self, conn: Any, alive: bool) -> None:
        with self.fake._lock:
            if alive:
                self.fake._connections.add(conn)
            else:
                self.fake._connections.discard(conn)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # a client that hangs up mid-answer is normal in fault tests; anything else is recorded
        import sys

        exc = sys.exc_info()[1]
        if not isinstance(exc, ConnectionError | TimeoutError):
            self.fake._note_error(f"fake server handler crashed: {exc!r}")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "FakeDeepSeek/1.0"
    sys_version = ""
    timeout = 30  # bound any blocked socket operation so shutdown can always join
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean

    def setup(self) -> None:
        super().setup()
        self.server.track(self.connection, True)

    def finish(self) -> None:
        self.server.track(self.connection, False)
        super().finish()

    @property
    def keep_alive(self) -> bool:
        return self.server.fake.keep_alive

    def do_GET(self) -> None:
        path, _, query = self.path.partition("?")
        headers = {k.lower(): v for k, v in self.headers.items()}
        fake = self.server.fake
        if is_files_path(path):
            self._send_json(*fake._files_call(headers, lambda: fake.files.answer_get(path, query)))
            return
        status, payload = fake._get(path, headers)
        self._send_json(status, payload)

    def do_DELETE(self) -> None:
        path = self.path.split("?", 1)[0]
        headers = {k.lower(): v for k, v in self.headers.items()}
        fake = self.server.fake
        if not is_files_path(path):
            self._send_json(404, Rejection(404, f"Not Found: {path}", code=None).body())
            return
        self._send_json(*fake._files_call(headers, lambda: fake.files.answer_delete(path)))

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0]
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if path in FILE_PATHS:
            headers = {k.lower(): v for k, v in self.headers.items()}
            fake = self.server.fake
            self._send_json(*fake._files_call(headers, lambda: fake.files.upload(headers, raw)))
            return
        if path in _SEARCH_PATHS:
            headers = {k.lower(): v for k, v in self.headers.items()}
            self._send_json(*self.server.fake._search(headers, raw))
            return
        if path not in _PATHS:
            self._send_json(404, Rejection(404, f"Not Found: {path}", code=None).body())
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        try:
            self.server.fake._serve(self, path, headers, raw)
        except (ConnectionError, TimeoutError):
            self.close_connection = True  # the client went away

    def _end_headers(self) -> None:
        if not self.keep_alive:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()

    def _send_json(self, status: int, payload: Mapping[str, Any]) -> None:
        data = compact(payload)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self._end_headers()
        self.wfile.write(data)

    def _start_body(self, content_type: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self._end_headers()


# ---------------------------------------------------------------------------------------------
# The server


class FakeDeepSeekServer:
    """A DeepSeek-compatible chat-completions server on ``127.0.0.1`` (ephemeral port).

    Use as a context manager (``with`` or ``async with``), or call :meth:`start` / :meth:`close`.
    Answers come from ``script`` (first in, first out, extended by :meth:`push`) and, once the
    script is empty, from ``handler(request)``; with neither, the server answers 500 and the
    problem is recorded in :attr:`errors` (and :meth:`assert_exhausted` fails).

    - ``models``: accepted model names (None accepts any); others get 400 "Model Not Exist".
    - ``api_key``: when set, any other bearer token gets 401.
    - ``unit_tokens`` / ``count_last_unit``: prefix-cache settings (see
      :class:`~reasonix.testing.prefix_cache.PrefixCache`; the 2026 measurement is
      ``unit_tokens=128, count_last_unit=False``). One cache per (model, ``user_id``).
    - ``chars_per_token``: the deterministic tokenisation (see :func:`tokenize`).
    - ``usage_style``: ``"deepseek"`` puts usage (with ``prompt_cache_hit_tokens`` /
      ``prompt_cache_miss_tokens``) on the finishing chunk; ``"openai"`` sends it only with
      ``stream_options.include_usage``, on a separate final chunk with ``choices: []``, with
      ``prompt_tokens_details.cached_tokens`` as the only cache figure.

    - ``cache_formula``: ``"measured"`` applies the 2026-09 fit (128-token units, the unit holding
      the end of the matched prefix never counts: a full match of ``n`` tokens hits
      ``128 * max(0, n // 128 - 1)``); it sets ``unit_tokens`` to 128.
    - ``listed_models``: the ids ``GET /models`` lists (None answers 404, like a server without
      a model list); by default today's ``deepseek-flash`` and ``deepseek-v4-pro``.
    - ``balance``: the ``GET /user/balance`` answer (None answers 404).
    - ``keep_alive``: keep connections open between requests (HTTP/1.1, as DeepSeek does);
      False answers with ``Connection: close``.
    - ``delta_chars``: characters per streamed delta (reasoning, text and tool arguments); the
      default ``chars_per_token`` is about one token per chunk, as the live service streams.
    - ``answer_model``: the model name the answer carries (a name, or a mapping from requested
      to answering names); by default the requested one. A retired alias answered by today's
      model looks like ``answer_model={"deepseek-v4-flash": "deepseek-flash"}``.

    The server enforces DeepSeek's documented rules with its documented error bodies: in
    thinking mode a request that carries tools must pass back the ``reasoning_content`` of
    every earlier assistant message (400 otherwise); at most 128 tools with names matching
    ``[a-zA-Z0-9_-]{1,64}``; ``reasoning_effort`` ``low|high|max`` (minimal, medium, xhigh,
    ultra are mapped; anything else is 422 "unknown variant"); no ``required`` or named
    ``tool_choice`` in thinking mode; the retired ``deepseek-chat`` / ``deepseek-reasoner`` are
    400; ``max_tokens`` within 1..393216. The effort is part of the cache identity.

    In thinking mode (the default), a scripted reply with tool calls but no reasoning gets a short
    generated ``reasoning_content``, as the real model always reasons before calling tools; with
    thinking disabled a reply's reasoning is never sent. ``Reply.meta["raw_sse"]`` (bytes) is
    sent verbatim as the streamed body, for protocol edge cases.
    """

    def __init__(
        self,
        script: Iterable[Reply] = (),
        *,
        handler: Callable[[RecordedRequest], Reply] | None = None,
        models: Iterable[str] | None = None,
        api_key: str | None = None,
        unit_tokens: int = 64,
        count_last_unit: bool = True,
        chars_per_token: int = 4,
        usage_style: UsageStyle = "deepseek",
        cache_formula: CacheFormula = "units",
        listed_models: Iterable[str] | None = LISTED_MODELS,
        balance: Mapping[str, Any] | None = DEFAULT_BALANCE,
        keep_alive: bool = True,
        delta_chars: int | None = None,
        answer_model: str | Mapping[str, str] | None = None,
        search_results: SearchResults = default_search_results,
    ) -> None:
        if cache_formula not in ("units", "measured"):
            raise ValueError(f"cache_formula must be 'units' or 'measured', not {cache_formula!r}")
        if cache_formula == "measured":
            unit_tokens = 128
        if chars_per_token < 1:
            raise ValueError("chars_per_token must be at least 1")
        if usage_style not in ("deepseek", "openai"):
            raise ValueError(f"usage_style must be 'deepseek' or 'openai', not {usage_style!r}")
        self._queue: deque[Reply] = deque(script)
        self.handler = handler
        self.models = frozenset(models) if models is not None else None
        self.api_key = api_key
        self.unit_tokens = unit_tokens
        self.count_last_unit = count_last_unit
        self.chars_per_token = chars_per_token
        self.usage_style: UsageStyle = usage_style
        self.cache_formula: CacheFormula = cache_formula
        self.listed_models = tuple(listed_models) if listed_models is not None else None
        self.balance = balance
        self.keep_alive = keep_alive
        self.delta_chars = delta_chars if delta_chars is not None else chars_per_token
        if self.delta_chars < 1:
            raise ValueError("delta_chars must be at least 1")
        self.answer_model = answer_model
        self.search_results = search_results
        #: every search request, in arrival order (see :class:`RecordedSearch`)
        self.searches: list[RecordedSearch] = []
        #: statuses the next search requests fail with (first in, first out)
        self.search_faults: deque[int] = deque()
        #: the Files API (``POST /files`` …): uploaded files, and every upload in ``.uploads``
        self.files = FakeFiles()
        self._connections: set[Any] = set()
        #: every request received on the chat-completions paths, in arrival order
        self.requests: list[RecordedRequest] = []
        #: paths of the GET requests answered (``/models``, ``/user/balance``)
        self.get_requests: list[str] = []
        #: problems on the server side (script exhausted, handler errors), for tests to see
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._caches: dict[tuple[str, str | None, str | None], PrefixCache] = {}
        self._stop = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle --------------------------------------------------------------------------------

    def start(self) -> FakeDeepSeekServer:
        """Bind and serve in a background thread."""
        if self._httpd is not None:
            return self
        httpd = _HTTPServer(("127.0.0.1", 0), _Handler)
        httpd.fake = self
        self._httpd = httpd
        self._stop.clear()
        self._thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="FakeDeepSeekServer",
            daemon=True,
        )
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving, end stalls, join handler threads and close the listening socket."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._stop.set()
        httpd.shutdown()
        # Kept-alive connections wait in their handler threads for another request: end them
        # so joining those threads does not wait for the handler's socket timeout.
        import socket

        with self._lock:
            open_connections = list(self._connections)
        for conn in open_connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # already closed by the client
        httpd.server_close()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def __enter__(self) -> FakeDeepSeekServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    async def __aenter__(self) -> FakeDeepSeekServer:
        return self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        # joining handler threads must not block the event loop a client may still be using
        await asyncio.to_thread(self.close)

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("FakeDeepSeekServer is not running")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` (both ``/chat/completions`` and ``/v1/...`` are served)."""
        return f"http://127.0.0.1:{self.port}"

    # -- script -----------------------------------------------------------------------------------

    def push(self, *replies: Reply) -> None:
        """Append replies to the script."""
        with self._lock:
            self._queue.extend(replies)

    @property
    def remaining(self) -> int:
        """Scripted replies not used yet."""
        with self._lock:
            return len(self._queue)

    def assert_exhausted(self) -> None:
        """Fail if scripted replies are left, or if a request found the script empty."""
        with self._lock:
            left = len(self._queue)
            errors = list(self.errors)
        if left:
            raise AssertionError(f"{left} scripted replies were never requested")
        if errors:
            raise AssertionError("fake server problems: " + "; ".join(errors))

    @property
    def last_request(self) -> RecordedRequest:
        with self._lock:
            if not self.requests:
                raise AssertionError("the fake server received no request")
            return self.requests[-1]

    def reset_cache(self) -> None:
        """Forget all cached prefixes (as if the cache had expired)."""
        with self._lock:
            self._caches.clear()

    def _note_error(self, message: str) -> None:
        with self._lock:
            self.errors.append(message)

    # -- serving ----------------------------------------------------------------------------------

    def _authorised(self, headers: Mapping[str, str]) -> bool:
        return self.api_key is None or headers.get("authorization", "") == f"Bearer {self.api_key}"

    def _get(self, path: str, headers: Mapping[str, str]) -> tuple[int, dict[str, Any]]:
        """``GET /models`` and ``GET /user/balance`` (with or without ``/v1``)."""
        if path in _MODELS_PATHS and self.listed_models is not None:
            payload: Mapping[str, Any] = {
                "object": "list",
                "data": [model_entry(name) for name in self.listed_models],
            }
        elif path in _BALANCE_PATHS and self.balance is not None:
            payload = self.balance
        else:
            return 404, Rejection(404, f"Not Found: {path}", code=None).body()
        if not self._authorised(headers):
            return 401, AUTH_FAILED.body()
        with self._lock:
            self.get_requests.append(path)
        return 200, dict(payload)

    def _files_call(
        self, headers: Mapping[str, str], call: Callable[[], tuple[int, dict[str, Any]]]
    ) -> tuple[int, dict[str, Any]]:
        """A Files API request, once its key is accepted (see :mod:`.fake_files`)."""
        if not self._authorised(headers):
            return 401, AUTH_FAILED.body()
        return call()

    def _search(self, headers: Mapping[str, str], raw: bytes) -> tuple[int, dict[str, Any]]:
        """``POST /v1/tools/search``: validate, answer deterministic results, record."""
        try:
            body = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            body = None
        record = RecordedSearch(body if isinstance(body, dict) else {}, 200)
        with self._lock:
            self.searches.append(record)
            fault = self.search_faults.popleft() if self.search_faults else None
        try:
            if not self._authorised(headers):
                raise AUTH_FAILED
            if fault is not None:
                message, kind = STATUS_MESSAGES.get(fault, ("Error", "api_error"))
                raise Rejection(fault, message, type_=kind, code=kind)
            if not isinstance(body, dict):
                raise bad_request("Failed to parse the request body as JSON")
            query = body.get("query")
            if not isinstance(query, str) or not query.strip() or len(query) > SEARCH_QUERY_MAX:
                raise bad_request(
                    f"query must be 1 to {SEARCH_QUERY_MAX} characters, not only whitespace",
                    "query",
                )
            count = body.get("count", SEARCH_COUNT_DEFAULT)
            if (
                not isinstance(count, int)
                or isinstance(count, bool)
                or not 1 <= count <= SEARCH_COUNT_MAX
            ):
                raise bad_request(f"count must be an integer in [1, {SEARCH_COUNT_MAX}]", "count")
        except Rejection as rejection:
            record.status, record.error = rejection.status, rejection.message
            return rejection.status, rejection.body()
        results = list(self.search_results(query, count))[:count]
        if not body.get("need_content"):
            results = [{**r, "content": ""} for r in results]
        record.results = len(results)
        return 200, {"results": results}

    def _serve(self, http: _Handler, path: str, headers: dict[str, str], raw: bytes) -> None:
        with self._lock:
            record = RecordedRequest(len(self.requests), path, headers, raw)
            record.client_port = int(http.client_address[1])
            self.requests.append(record)
        try:
            reply = self._accept(record)
        except Rejection as rejection:
            record.status = rejection.status
            record.error = rejection.message
            http._send_json(rejection.status, rejection.body())
            return
        record.reply = reply
        fault = reply.fault
        if fault is not None and fault.status is not None:
            default_msg, err_type = STATUS_MESSAGES.get(fault.status, ("Error", "api_error"))
            failure = Rejection(
                fault.status, fault.message or default_msg, type_=err_type, code=err_type
            )
            record.status = fault.status
            record.error = failure.message
            http._send_json(fault.status, failure.body())
            return
        answer = self._answer(record, reply)
        self._write_answer(http, record, reply, answer)

    def _accept(self, record: RecordedRequest) -> Reply:
        """Authenticate, parse, validate and pick the reply; raise ``Rejection`` to refuse."""
        if not self._authorised(record.headers):
            raise AUTH_FAILED
        from reasonix.images import MAX_BODY_BYTES

        if len(record.raw_body) > MAX_BODY_BYTES:
            raise bad_request(
                f"Request body of {len(record.raw_body):,} bytes is over the "
                f"{MAX_BODY_BYTES:,}-byte (48 MiB) limit"
            )
        try:
            body = json.loads(record.raw_body)
        except (ValueError, UnicodeDecodeError) as exc:
            raise bad_request(f"Failed to parse the request body as JSON: {exc}") from None
        if isinstance(body, dict):
            record.body = body  # recorded even when validation rejects it below
        validate_request(body, models=self.models, files=self.files.image_info)

        with self._lock:
            scripted = self._queue.popleft() if self._queue else None
        if scripted is not None:
            return scripted
        if self.handler is None:
            message = (
                f"FakeDeepSeekServer: script exhausted at request #{record.index} "
                "(push() more replies or pass handler=)"
            )
            self._note_error(message)
            raise Rejection(500, message, type_="server_error", code="script_exhausted")
        try:
            reply: object = self.handler(record)
        except Exception as exc:
            message = f"FakeDeepSeekServer: handler raised {exc!r}"
            self._note_error(message)
            raise Rejection(500, message, type_="server_error", code="handler_error") from None
        if not isinstance(reply, Reply):
            message = f"FakeDeepSeekServer: handler must return a Reply, got {reply!r}"
            self._note_error(message)
            raise Rejection(500, message, type_="server_error", code="handler_error")
        return reply

    def _answer(self, record: RecordedRequest, reply: Reply) -> Answer:
        body = record.body
        thinking = thinking_enabled(body)
        fault = reply.fault
        reasoning = reply.reasoning if thinking else None
        if thinking and reply.tool_calls and reasoning is None:
            names = ", ".join(c.name for c in reply.tool_calls)
            reasoning = f"I should call {names}."
        tool_calls = [c.to_wire() for c in reply.tool_calls]
        finish = reply.effective_finish_reason
        if fault is not None and fault.insufficient_resource:
            finish = "insufficient_system_resource"

        # The output as a client that stores it whole replays it in the next request.
        replayed: dict[str, Any] = {
            "role": "assistant",
            "content": reply.content,
            "reasoning_content": reasoning or "",
        }
        if tool_calls:
            replayed["tool_calls"] = tool_calls
        c = self.chars_per_token
        prompt = tokenize(render_prompt(body, files=self.files.image_info), c)
        output = tokenize([render_message(replayed, with_reasoning=bool(body.get("tools")))], c)
        # The effort is part of the cache identity: changing it breaks prefix reuse.
        key = (str(body.get("model")), body.get("user_id"), effective_effort(body))
        with self._lock:
            cache = self._caches.get(key)
            if cache is None:
                cache = self._caches[key] = PrefixCache(
                    self.unit_tokens,
                    self.count_last_unit,
                    drop_last_unit=self.cache_formula == "measured",
                )
            outcome = cache.process(prompt, output)

        reasoning_tokens = count_tokens(reasoning, c)
        completion = reasoning_tokens + count_tokens(reply.content, c)
        completion += sum(count_tokens(t.name + t.arguments, c) for t in reply.tool_calls)
        usage = Usage(
            prompt_tokens=outcome.prompt_tokens,
            cache_hit_tokens=outcome.hit_tokens,
            cache_miss_tokens=outcome.miss_tokens,
            completion_tokens=completion,
            reasoning_tokens=reasoning_tokens,
        )
        record.prompt_tokens = outcome.prompt_tokens
        record.cache_hit_tokens = outcome.hit_tokens
        record.stored_tokens_after_output = outcome.stored_tokens
        stream_options = body.get("stream_options")
        include_usage = isinstance(stream_options, dict) and bool(
            stream_options.get("include_usage")
        )
        reported = self.usage_style == "deepseek" or include_usage or not record.stream
        clean = fault is None or not (
            fault.cut_after_bytes is not None or fault.malformed_chunk or fault.cut_in is not None
        )
        if reported and clean and "raw_sse" not in reply.meta:
            record.usage = usage
        record.answered_model = self._answering_model(str(body.get("model")))
        return Answer(
            id=str(uuid.uuid4()),
            created=int(time.time()),
            model=record.answered_model,
            thinking=thinking,
            content=reply.content,
            reasoning=reasoning,
            tool_calls=tool_calls,
            finish_reason=finish,
            usage_wire=wire_usage(usage, self.usage_style, thinking=thinking),
            usage_style=self.usage_style,
            include_usage=include_usage,
            delta_chars=self.delta_chars,
        )

    def _answering_model(self, requested: str) -> str:
        named = self.answer_model
        if isinstance(named, str):
            return named
        if named is not None:
            return named.get(requested, requested)
        return requested

    def _write_answer(
        self, http: _Handler, record: RecordedRequest, reply: Reply, answer: Answer
    ) -> None:
        fault = reply.fault
        keepalives = fault.keepalive_lines if fault else 0
        events: Sequence[bytes]
        if record.stream:
            http._start_body("text/event-stream; charset=utf-8")
            prefix = b": keep-alive\n\n" * keepalives
            raw_sse = reply.meta.get("raw_sse")
            if isinstance(raw_sse, bytes | bytearray):
                events = [bytes(raw_sse)]
            else:
                malformed = bool(fault and fault.malformed_chunk)
                events = list(answer.sse_events(malformed=malformed))
        else:
            http._start_body("application/json")
            prefix = b"\n" * keepalives
            events = [compact(answer.completion())]
        if fault is not None and (fault.cut_in or fault.stall_in) and record.stream:
            fault = place_fault(fault, len(prefix), events)
        writer = _BodyWriter(http.wfile, fault, self._stop)
        try:
            if prefix:
                writer.write(prefix)
            for event in events:
                writer.write(event)
            writer.finish()
        except _Cut:
            # closing without the terminating chunk: the client sees a cut body
            http.close_connection = True
