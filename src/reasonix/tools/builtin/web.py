"""The ``web_fetch`` tool: one URL as readable text the model can page through.

- ``http`` and ``https`` only. Before every connection (the first one and after each redirect,
  which are followed here, not by the HTTP client) the host name is resolved and **every**
  address it resolves to is checked: loopback, private, link-local (cloud metadata), shared,
  multicast and reserved addresses are refused unless the user's own configuration allows them
  (``[web] allow_private = true``, or the host, the address or its network in
  ``[web] allow_hosts``). An IPv6 address that carries an IPv4 one (IPv4-mapped, -compatible
  and -translated, NAT64's ``64:ff9b::/96``, 6to4) is judged by the IPv4 address; NAT64's
  local-use ``64:ff9b:1::/48`` and Teredo are refused. The connection then goes to the address
  that was checked, so a second DNS answer cannot swap in another one (TLS still verifies the
  certificate for the host name).
- Every redirect hop is also a permission question of its own (``ToolContext.recheck``): an
  allow rule for one URL does not cover where it redirects; a hop no rule allows asks, and is
  refused where no one can answer; a deny rule refuses it in every mode.
- The body is read as sent and decoded here, within ``max_bytes`` at every step and at most two
  ``Content-Encoding`` layers (:mod:`reasonix.tools.builtin.web_body`).
- HTML becomes markdown (navigation, headers, footers, forms and scripts dropped; headings,
  lists, tables, code and links kept); plain text, JSON, XML, YAML
  and other textual types are returned as they are; anything else (images, PDFs, archives) is
  refused with a message that names the type. There is no summariser: the same page always
  gives the same text.
- Limits: ``max_bytes`` downloaded (the rest is not read and the cut is reported), ``timeout``
  seconds for the whole fetch, ``max_redirects`` hops. The text is returned in pages of
  ``max_chars`` characters from ``offset``, each page saying where the next one starts; the
  converted page is kept for the session so later pages come from the same copy.
- Not read-only: it reaches the network, so in ``ask`` mode it asks, and rules such as
  ``web_fetch(https://docs.python.org/*)`` allow or deny by URL.

httpx and the HTML converter are imported on the first call only.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

from reasonix.tools.builtin.files import builtin_tool
from reasonix.tools.builtin.web_body import ACCEPT_ENCODING, BodyError, decoded_body
from reasonix.tools.registry import Effect, PermissionDecision, Tool, ToolContext, ToolResult

if TYPE_CHECKING:
    import httpx

_T = TypeVar("_T")

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

DEFAULT_PAGE_CHARS = 20_000
#: How long a question about a redirect may wait for its answer.
QUESTION_SECONDS = 600
#: Pages larger than this would be cut again when the result enters the session.
MAX_PAGE_CHARS = 30_000

_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_TEXT_TYPES = frozenset(
    {
        "application/json",
        "application/xml",
        "application/javascript",
        "application/ecmascript",
        "application/x-javascript",
        "application/yaml",
        "application/x-yaml",
        "application/toml",
        "application/x-sh",
        "application/sql",
        "application/graphql",
        "application/x-ndjson",
        "application/ld+json",
    }
)
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_TITLE = re.compile(rb"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)


@dataclass(frozen=True, slots=True)
class WebOptions:
    """Limits and the user's exceptions to the address rules (``[web]`` in their config).

    ``allow_hosts`` entries are host names (``intranet.example``), addresses (``10.0.0.5``)
    or networks (``192.168.0.0/16``)."""

    allow_private: bool = False
    allow_hosts: tuple[str, ...] = ()
    timeout: float = 30.0
    max_bytes: int = 5_000_000
    max_redirects: int = 5
    user_agent: str = "reasonix-web-fetch/1 (+https://github.com/reasonix)"


@dataclass(frozen=True, slots=True)
class _Page:
    url: str
    content_type: str
    text: str
    status: int
    note: str = ""


class FetchRefused(Exception):
    """The URL (or a redirect) may not be fetched; the message says why and what would allow
    it."""


#: IPv4 ranges that are not globally reachable but that some Python versions call global:
#: IETF protocol assignments (``192.0.0.192`` is a cloud metadata address) and the retired 6to4
#: relay anycast range.
_NOT_GLOBAL_V4 = tuple(ipaddress.IPv4Network(n) for n in ("192.0.0.0/24", "192.88.99.0/24"))


#: IPv6 prefixes whose last 32 bits are an IPv4 address the packet ends up at: IPv4-compatible
#: (``::a.b.c.d``, deprecated), IPv4-mapped (``::ffff:a.b.c.d``), IPv4-translated
#: (``::ffff:0:a.b.c.d``) and the NAT64 well-known prefix (``64:ff9b::a.b.c.d``).
_EMBEDDING = tuple(
    ipaddress.IPv6Network(n) for n in ("::/96", "::ffff:0:0/96", "::ffff:0:0:0/96", "64:ff9b::/96")
)
#: IPv6 ranges refused whatever they carry: NAT64's local-use prefix (each network chooses where
#: in it the IPv4 address sits, so it cannot be read back) and Teredo (a tunnel to wherever).
#: Also the deprecated site-local range (a private range, which Python's ``is_global`` calls
#: global).
_TUNNELS = tuple(ipaddress.IPv6Network(n) for n in ("64:ff9b:1::/48", "2001::/32", "fec0::/10"))


def embedded_ipv4(address: IPAddress) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address stands for (empty for one that embeds none): the
    forms of :data:`_EMBEDDING`, 6to4 (``2002:a.b.c.d::/48``) and Teredo's server and client."""
    if not isinstance(address, ipaddress.IPv6Address):
        return []
    found: list[ipaddress.IPv4Address] = []
    if any(address in net for net in _EMBEDDING) and int(address) & 0xFFFFFFFF > 1:
        found.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    if address.sixtofour is not None:
        found.append(address.sixtofour)
    if address.teredo is not None:
        found.extend(address.teredo)
    return found


def _blocked(address: IPAddress) -> bool:
    """Whether ``address`` is not a public unicast address: an IPv6 address that carries an
    IPv4 one is judged by the IPv4 address (:func:`embedded_ipv4`), tunnels are refused."""
    if isinstance(address, ipaddress.IPv6Address):
        if any(address in net for net in _TUNNELS):
            return True
        inner = embedded_ipv4(address)
        if inner:
            return any(_blocked(v4) for v4 in inner)
    elif any(address in net for net in _NOT_GLOBAL_V4):
        return True
    return not address.is_global or address.is_multicast


class AddressPolicy:
    """Which hosts and addresses ``web_fetch`` may connect to."""

    def __init__(self, allow_private: bool = False, allow_hosts: Sequence[str] = ()) -> None:
        self.allow_private = allow_private
        self.names: set[str] = set()
        self.networks: list[IPNetwork] = []
        for entry in allow_hosts:
            text = entry.strip().lower().strip("[]")
            try:
                self.networks.append(ipaddress.ip_network(text, strict=False))
            except ValueError:
                self.names.add(text.rstrip("."))

    def host_allowed(self, host: str) -> bool:
        return self.allow_private or host.lower().rstrip(".") in self.names

    def address_allowed(self, address: IPAddress) -> bool:
        if not _blocked(address):
            return True
        if self.allow_private:
            return True
        # An allowed network covers the IPv6 forms of its addresses too.
        return any(a in net for a in (address, *embedded_ipv4(address)) for net in self.networks)


async def resolve(host: str, port: int) -> list[IPAddress]:
    """Every address ``host`` resolves to (an address literal resolves to itself)."""
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        pass
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise FetchRefused(f"cannot resolve the host {host!r}: {exc.strerror}") from None
    out: list[IPAddress] = []
    for _family, _type, _proto, _name, sockaddr in infos:
        address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
        if address not in out:
            out.append(address)
    if not out:
        raise FetchRefused(f"the host {host!r} has no address")
    return out


def _media_type(header: str) -> str:
    return header.split(";", 1)[0].strip().lower()


def is_textual(media_type: str) -> bool:
    """Types returned as they are (besides HTML, which is converted)."""
    return (
        media_type.startswith("text/")
        or media_type in _TEXT_TYPES
        or media_type.endswith(("+json", "+xml", "+yaml"))
    )


def html_to_markdown(html: bytes | str, url: str = "") -> str:
    """Readable markdown of an HTML page: headings, lists, tables, code and links, with what is
    not content (navigation, headers, footers, asides, forms, scripts, styles) dropped; the
    page's whole text when nothing is left after that. Deterministic.

    The converter is ``html-to-markdown`` (one compiled wheel, no dependencies); the text is
    the page's own, in its order: there is no reader-mode guessing and no summariser."""
    import html_to_markdown as converter

    page = _as_str(html)
    drop = ["nav", "header", "footer", "aside", "form", "script", "style", "noscript", "template"]
    common: dict[str, Any] = {
        "skip_images": True,
        "extract_metadata": False,  # the title is added by the caller
        "compact_tables": True,
        "autolinks": False,
        "base_url": url or None,
    }
    main = converter.ConversionOptions(
        **common,
        preprocessing=converter.PreprocessingOptions(
            enabled=True, preset="standard", remove_navigation=True, remove_forms=True
        ),
        exclude_selectors=drop,
    )
    text = (converter.convert(page, main).content or "").strip()
    if not text:
        whole = converter.ConversionOptions(**common, exclude_selectors=["script", "style"])
        text = (converter.convert(page, whole).content or "").strip()
    return text


def _as_str(html: bytes | str) -> str:
    return html.decode("utf-8", "replace") if isinstance(html, bytes) else html


class WebFetchTool:
    """``web_fetch`` with its options, its address policy and the pages fetched this session.

    ``transport`` is the seam for an httpx transport (tests keep the real one and a server on
    loopback; an embedding application may pass its own)."""

    def __init__(
        self,
        options: WebOptions | None = None,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.options = options or WebOptions()
        self.policy = AddressPolicy(self.options.allow_private, self.options.allow_hosts)
        self.transport = transport
        self._pages: OrderedDict[str, _Page] = OrderedDict()

    async def web_fetch(
        self,
        ctx: ToolContext,
        url: Annotated[str, "http(s) URL"],
        offset: Annotated[int, "character to start at (from a previous page's next offset)"] = 0,
        max_chars: Annotated[int, f"page size (default {DEFAULT_PAGE_CHARS})"] = (
            DEFAULT_PAGE_CHARS
        ),
    ) -> ToolResult:
        """Fetch a web page as markdown (HTML converted; text and JSON as they are), in pages:
        pass offset to read on. No summary: the text itself."""
        if offset < 0:
            return ToolResult.error("offset must be 0 or more.")
        size = max(1, min(max_chars, MAX_PAGE_CHARS))
        page = self._pages.get(url)
        if page is None:
            try:
                page = await self._fetch(url, ctx.recheck)
            except FetchRefused as exc:
                return ToolResult.error(f"web_fetch refused {url}: {exc}")
            except TimeoutError:
                return ToolResult.error(
                    f"web_fetch gave up on {url} after {self.options.timeout:g} s ([web] timeout)."
                )
            except Exception as exc:
                return ToolResult.error(f"web_fetch could not fetch {url}: {_describe(exc)}")
            self._remember(url, page)
        return _render(page, offset, size)

    def _remember(self, url: str, page: _Page) -> None:
        self._pages[url] = page
        while len(self._pages) > 16:
            self._pages.popitem(last=False)

    async def _fetch(self, url: str, recheck: Recheck | None = None) -> _Page:
        """Fetch ``url``, following redirects here. Each hop is checked against the address
        policy and (``recheck``) the permission rules, as a call of its own would be: an allow
        rule for one URL does not cover wherever it redirects. ``[web] timeout`` bounds the
        network time of the whole fetch; a question a hop asks is not counted."""
        import httpx

        opts = self.options
        current = _parse(url)
        deadline = _Deadline(opts.timeout)
        async with httpx.AsyncClient(
            transport=self.transport,
            follow_redirects=False,
            trust_env=False,  # no proxy: the checked address is the one connected to
            timeout=httpx.Timeout(opts.timeout),
        ) as client:
            for _hop in range(opts.max_redirects + 1):
                pinned, headers, extensions = await deadline.run(self._pin(current))
                request = client.build_request(
                    "GET", pinned, headers=headers, extensions=extensions
                )
                response = await deadline.run(client.send(request, stream=True))
                try:
                    if response.status_code in _REDIRECTS and "location" in response.headers:
                        target = current.join(response.headers["location"])
                        current = _parse(str(target), redirected_from=str(current))
                    else:
                        return await deadline.run(self._read(response, str(current)))
                finally:
                    await response.aclose()
                if recheck is not None:
                    decision = await recheck({"url": str(current)})
                    if not decision.allowed:
                        raise FetchRefused(
                            f"it redirects to {current}, which the permission rules do not "
                            f"allow: {decision.reason or 'refused'}"
                        )
        raise FetchRefused(f"more than {opts.max_redirects} redirects")

    async def _pin(self, url: httpx.URL) -> tuple[httpx.URL, dict[str, str], dict[str, Any]]:
        """The URL with its host replaced by a checked address, and the headers and TLS name
        that keep the request addressed to the original host."""
        host = url.host
        port = url.port or (443 if url.scheme == "https" else 80)
        addresses = await resolve(host, port)
        if not self.policy.host_allowed(host):
            bad = [a for a in addresses if not self.policy.address_allowed(a)]
            if bad:
                raise FetchRefused(
                    f"{host} resolves to {bad[0]}, a loopback, private or otherwise non-public "
                    "address. To allow it, add it to [web] allow_hosts (or set [web] "
                    "allow_private = true) in your user config.toml."
                )
        netloc = url.netloc.decode("ascii")
        headers = {
            "Host": netloc,
            "User-Agent": self.options.user_agent,
            "Accept": "text/html,application/xhtml+xml,text/markdown,text/plain,application/json;"
            "q=0.9,*/*;q=0.5",
            "Accept-Encoding": ACCEPT_ENCODING,
        }
        extensions: dict[str, Any] = {}
        if url.scheme == "https":
            extensions["sni_hostname"] = host
        return url.copy_with(host=str(addresses[0])), headers, extensions

    async def _read(self, response: httpx.Response, url: str) -> _Page:
        limit = self.options.max_bytes
        try:
            # The bytes as sent, decoded here within the limit (see web_body).
            encoding = response.headers.get("content-encoding", "")
            body, cut = await decoded_body(response.aiter_raw(), encoding, limit)
        except BodyError as exc:
            raise FetchRefused(str(exc)) from None
        header = response.headers.get("content-type", "")
        media = _media_type(header)
        note = f"the download stopped at {limit} bytes ([web] max_bytes)" if cut else ""
        if not media and b"\x00" in body[:4096]:
            media = "application/octet-stream"
        if media in _HTML_TYPES or (not media and body.lstrip()[:1] == b"<"):
            html = body.decode(response.encoding or "utf-8", "replace")
            text = await asyncio.to_thread(html_to_markdown, html, url)
            title = _TITLE.search(body[:65536])
            if title:
                name = " ".join(title.group(1).decode("utf-8", "replace").split())
                if name and not text.startswith("# " + name):
                    text = f"Title: {name}\n\n{text}"
            return _Page(url, media or "text/html", text, response.status_code, note)
        if not media or is_textual(media):
            text = body.decode(response.encoding or "utf-8", "replace")
            return _Page(url, media or "text/plain", text, response.status_code, note)
        raise FetchRefused(
            f"it is {media}, not text ({len(body)} bytes read); web_fetch returns text, "
            "markdown, JSON and HTML pages only."
        )


Recheck = Callable[[Mapping[str, Any]], Awaitable[PermissionDecision]]


class _Deadline:
    """What is left of the fetch's network time; :meth:`run` bounds one step by it."""

    def __init__(self, seconds: float) -> None:
        self.left = seconds

    async def run(self, step: Awaitable[_T]) -> _T:
        loop = asyncio.get_running_loop()
        started = loop.time()
        try:
            return await asyncio.wait_for(step, max(self.left, 0.0))
        finally:
            self.left -= loop.time() - started


def _parse(url: str, redirected_from: str | None = None) -> httpx.URL:
    import httpx

    where = f" (a redirect from {redirected_from})" if redirected_from else ""
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise FetchRefused(f"not a valid URL{where}: {exc}") from None
    if parsed.scheme not in ("http", "https"):
        shown = parsed.scheme or "no scheme"
        raise FetchRefused(f"only http and https URLs can be fetched, not {shown}{where}")
    if not parsed.host:
        raise FetchRefused(f"the URL has no host{where}")
    return parsed


def _describe(exc: Exception) -> str:
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}"


def _render(page: _Page, offset: int, size: int) -> ToolResult:
    total = len(page.text)
    start = min(offset, total)
    end = min(start + size, total)
    head = [f"URL: {page.url}", f"Content-Type: {page.content_type} (HTTP {page.status})"]
    span = f"Characters {start}-{end} of {total}"
    if end < total:
        span += f"; more follows: call web_fetch (through more_tools) again with offset={end}"
    elif offset > total:
        span += "; the offset is past the end"
    head.append(span)
    if page.note:
        head.append(f"Note: {page.note}")
    content = "\n".join(head) + "\n\n" + page.text[start:end]
    return ToolResult(
        content,
        is_error=page.status >= 400,
        effects=(Effect("read", page.url, f"{start}:{end}:{total}"),),
    )


def web_tool(options: WebOptions | None = None) -> Tool:
    """``web_fetch`` as a registry tool (category ``web``; asks in ``ask`` mode)."""
    fetcher = WebFetchTool(options)
    return builtin_tool(
        fetcher.web_fetch,
        name="web_fetch",
        category="web",
        kind="fetch",
        aliases=("WebFetch",),
        subjects=("url",),
        # [web] timeout bounds the network time; this leaves room for a question a redirect
        # asks (see WebFetchTool._fetch).
        timeout=(options or WebOptions()).timeout + 15 + QUESTION_SECONDS,
    )
