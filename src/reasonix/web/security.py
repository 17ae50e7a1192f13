"""What keeps the dashboard for its user alone: the access token and password, the cookie they
are exchanged for, the Host, Origin and CSRF checks, the response headers, and the attempt limit.

A web page the user visits can send requests to ``127.0.0.1`` (and a DNS-rebinding page can even
read the answers under its own name), so nothing here trusts the network position:

- every API answer needs the session cookie, which only a POST of the access token (printed in
  the URL fragment, never sent to the server by the browser on its own) or of the password
  sets; the cookie is ``HttpOnly`` and ``SameSite=Strict``, its name carries the port (cookies
  are not separated by port, so two dashboards on one host would otherwise overwrite each
  other's);
- the ``Host`` header must name a loopback address or the bound host with the bound port, which
  a rebinding page cannot send;
- a state change needs an ``Origin`` equal to our own and the CSRF token of the cookie's
  session in ``X-CSRF-Token``;
- every answer carries a strict Content-Security-Policy (scripts and styles from our own files
  only), refuses framing, and never any CORS header;
- secrets are compared in constant time and failed logins are limited per client address.

The middleware is plain ASGI so it also guards the event stream without buffering it.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import secrets
import time
from collections import deque
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "CSRF_HEADER",
    "SECURITY_HEADERS",
    "AttemptLimiter",
    "Guard",
    "GuardMiddleware",
    "is_loopback",
]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

CSRF_HEADER = "x-csrf-token"

#: Headers on every answer. No inline script or style anywhere: the page's code and styles are
#: files we serve; the chart is SVG built with DOM calls.
SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (
        b"content-security-policy",
        b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        b"connect-src 'self'; font-src 'self'; manifest-src 'self'; base-uri 'none'; "
        b"form-action 'self'; frame-ancestors 'none'",
    ),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
    (b"permissions-policy", b"camera=(), microphone=(), geolocation=()"),
)

#: Paths answered without the cookie: the page shell and its static files (no data in them),
#: and the login itself.
PUBLIC_PATHS = frozenset({"/", "/favicon.svg"})
LOGIN_PATH = "/api/auth"
STATIC_PREFIX = "/static/"
SAFE_METHODS = frozenset({"GET", "HEAD"})
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


def is_loopback(host: str) -> bool:
    """``host`` (a name or an address) is this machine only."""
    name = host.strip("[]").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def is_wildcard(host: str) -> bool:
    """``host`` means every interface (``0.0.0.0``, ``::``)."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_unspecified
    except ValueError:
        return False


def _same(a: str, b: str) -> bool:
    """Constant-time equality of two secrets (hashed first, so the length is not leaked)."""
    return hmac.compare_digest(
        hashlib.sha256(a.encode("utf-8", "surrogatepass")).digest(),
        hashlib.sha256(b.encode("utf-8", "surrogatepass")).digest(),
    )


@dataclass
class AttemptLimiter:
    """At most ``limit`` failed logins per client address in ``window`` seconds; after that
    every login from that address is refused until the oldest failure ages out."""

    limit: int = 10
    window: float = 60.0
    clock: Callable[[], float] = time.monotonic
    _failures: dict[str, deque[float]] = field(default_factory=dict)

    def _recent(self, who: str) -> deque[float]:
        now = self.clock()
        failures = self._failures.setdefault(who, deque())
        while failures and now - failures[0] > self.window:
            failures.popleft()
        return failures

    def blocked_for(self, who: str) -> float:
        """Seconds until ``who`` may try again (0 when allowed now)."""
        failures = self._recent(who)
        if len(failures) < self.limit:
            return 0.0
        return max(1.0, self.window - (self.clock() - failures[0]))

    def failed(self, who: str) -> None:
        self._recent(who).append(self.clock())


@dataclass
class Guard:
    """The secrets and rules of one running dashboard.

    ``port`` and ``bound_host`` are what the server listens on; ``token`` is the access token
    of the printed URL; ``password`` (None: password logins are off) is the configured one.
    """

    port: int
    bound_host: str
    token: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    password: str | None = None
    limiter: AttemptLimiter = field(default_factory=AttemptLimiter)
    #: cookie value -> that browser session's CSRF token
    _sessions: dict[str, str] = field(default_factory=dict)

    @property
    def cookie_name(self) -> str:
        return f"reasonix_{self.port}"

    def host_allowed(self, host_header: str | None) -> bool:
        """The Host header names us: a loopback name or the bound host, with our port. On a
        wildcard bind any IP literal is accepted (a rebinding attack needs a DNS name)."""
        if not host_header:
            return False
        name, _, port = host_header.rpartition(":")
        if not name or port != str(self.port) or name.endswith(":"):
            return False
        name = name.lower()
        bare = name.strip("[]")
        if bare in LOOPBACK_NAMES or bare == self.bound_host.strip("[]").lower():
            return True
        if name.startswith("[") != name.endswith("]"):
            return False
        try:
            address = ipaddress.ip_address(bare)
        except ValueError:
            return False
        return address.is_loopback or is_wildcard(self.bound_host)

    @staticmethod
    def origin_allowed(origin: str | None, host_header: str) -> bool:
        """The request comes from our own page (the Host header was checked before)."""
        return origin is not None and _same(origin.lower(), f"http://{host_header}".lower())

    def login(self, *, token: str | None, password: str | None) -> tuple[str, str] | None:
        """A new browser session ``(cookie value, csrf token)`` for a right token or password;
        None otherwise (the caller counts the failure)."""
        ok = False
        if token:
            ok = _same(token, self.token)
        elif password and self.password is not None:
            ok = _same(password, self.password)
        if not ok:
            return None
        cookie, csrf = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        self._sessions[cookie] = csrf
        return cookie, csrf

    def csrf_for(self, cookie: str | None) -> str | None:
        """The CSRF token of the browser session holding ``cookie`` (None: not logged in)."""
        if not cookie:
            return None
        for known, csrf in self._sessions.items():
            if _same(cookie, known):
                return csrf
        return None

    def set_cookie_header(self, cookie: str) -> bytes:
        return f"{self.cookie_name}={cookie}; Path=/; HttpOnly; SameSite=Strict".encode("latin-1")


def _headers(scope: Scope) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in scope.get("headers", []):
        out.setdefault(key.decode("latin-1").lower(), value.decode("latin-1"))
    return out


def _cookies(header: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in header.split(";"):
        name, sep, value = part.strip().partition("=")
        if sep:
            out.setdefault(name, value)
    return out


async def _refuse(
    send: Send, status: int, message: str, extra: tuple[tuple[bytes, bytes], ...] = ()
) -> None:
    body = json.dumps({"error": message}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"cache-control", b"no-store"),
                *SECURITY_HEADERS,
                *extra,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class GuardMiddleware:
    """Applies :class:`Guard` to every HTTP request before the app sees it (see the module
    docstring); the login route itself is the app's, the rate limit is checked here."""

    def __init__(self, app: ASGIApp, guard: Guard) -> None:
        self.app = app
        self.guard = guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        guard = self.guard
        headers = _headers(scope)
        host = headers.get("host")
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        if not guard.host_allowed(host):
            await _refuse(
                send,
                400,
                f"unexpected Host header {host!r}: this dashboard answers to "
                f"127.0.0.1:{guard.port} or localhost:{guard.port} only",
            )
            return
        assert host is not None
        method = scope["method"]
        path = scope["path"]
        fetch_site = headers.get("sec-fetch-site")
        if method not in SAFE_METHODS:
            if not guard.origin_allowed(headers.get("origin"), host):
                await _refuse(send, 403, "cross-origin request refused (Origin must be this page)")
                return
            if fetch_site is not None and fetch_site not in ("same-origin", "none"):
                await _refuse(
                    send, 403, f"cross-site request refused (Sec-Fetch-Site {fetch_site})"
                )
                return
        public = path in PUBLIC_PATHS or path.startswith(STATIC_PREFIX)
        if path == LOGIN_PATH:
            client = scope.get("client") or ("?", 0)
            wait = guard.limiter.blocked_for(str(client[0]))
            if wait:
                await _refuse(
                    send,
                    429,
                    "too many failed logins; wait a minute and open the printed URL again",
                    ((b"retry-after", str(int(wait)).encode()),),
                )
                return
        elif not public:
            cookie = _cookies(headers.get("cookie", "")).get(guard.cookie_name)
            csrf = guard.csrf_for(cookie)
            if csrf is None:
                await _refuse(
                    send,
                    401,
                    "not logged in: open the URL `reasonix serve` printed (it carries the "
                    "access token)",
                )
                return
            if method not in SAFE_METHODS and not _same(headers.get(CSRF_HEADER, ""), csrf):
                await _refuse(send, 403, "missing or wrong CSRF token (X-CSRF-Token)")
                return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                raw = [
                    (k, v)
                    for k, v in message.get("headers", [])
                    if not k.lower().startswith(b"access-control-")
                ]
                names = {k.lower() for k, _ in raw}
                raw += [(k, v) for k, v in SECURITY_HEADERS if k not in names]
                if not public and b"cache-control" not in names:
                    raw.append((b"cache-control", b"no-store"))
                message["headers"] = raw
            await send(message)

        await self.app(scope, receive, send_with_headers)
