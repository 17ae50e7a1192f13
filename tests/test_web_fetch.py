"""``web_fetch`` against a real HTTP server on loopback: HTML to markdown, a large page paged
with ``offset``, text and JSON as they are, a binary type refused, loopback refused by default
and a redirect to a private address refused even when the first host is allowed; the address
exceptions come only from the user's config; URL permission rules. Through the registry and
through the real CLI."""

from __future__ import annotations

import gzip
import ipaddress
import json
import threading
import time
import zlib
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from reasonix.config import load_config
from reasonix.safety.permissions import ApprovalAnswer, PermissionEngine
from reasonix.testing import Reply
from reasonix.tools.builtin import WebOptions, default_tools
from reasonix.tools.builtin.web import AddressPolicy, WebFetchTool
from reasonix.tools.builtin.web_body import BodyError, decoded_body
from reasonix.tools.registry import ToolContext, ToolRegistry
from tests.support.approvals import ScriptedApprover
from tests.support.project import Project, project

__all__ = ["project"]

ARTICLE = """<!doctype html><html><head><title>Reasonix notes</title></head><body>
<nav><a href="/">Home</a> | <a href="/about">About</a> | menu entry nobody reads</nav>
<article>
<h1>Prefix caching</h1>
<p>DeepSeek bills a <b>cached</b> prompt token at a fraction of an uncached one, so an agent
that keeps each request a pure extension of the previous one pays little for history. See
<a href="https://api-docs.deepseek.com/">the API docs</a> for the details of the feature.</p>
<h2>Rules</h2>
<ul><li>keep the system prompt fixed</li><li>append, never edit</li></ul>
<pre><code>def cached(prefix):
    return prefix</code></pre>
<table><tr><th>kind</th><th>price</th></tr><tr><td>hit</td><td>0.028</td></tr></table>
</article>
<footer>copyright footer text</footer>
<script>var tracking = "should never appear";</script>
</body></html>"""

LARGE_WORDS = [f"word{i:05d}" for i in range(12000)]
LARGE = "\n".join(" ".join(LARGE_WORDS[i : i + 10]) for i in range(0, len(LARGE_WORDS), 10))


Route = tuple[int, dict[str, str], bytes]


class _Handler(BaseHTTPRequestHandler):
    routes: dict[str, Route]
    hits: list[str]

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.hits.append(self.path)
        if self.path == "/slow":
            time.sleep(3)
        status, headers, body = self.routes.get(
            self.path, (404, {"Content-Type": "text/plain"}, b"not found")
        )
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def web_site() -> Iterator[tuple[str, dict[str, Route], list[str]]]:
    """A loopback web server: its base URL, its routes and the paths requested."""
    routes: dict[str, Route] = {}
    hits: list[str] = []
    handler = type("Handler", (_Handler,), {"routes": routes, "hits": hits})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    base = f"http://127.0.0.1:{server.server_address[1]}"
    routes.update(
        {
            "/article": (200, {"Content-Type": "text/html; charset=utf-8"}, ARTICLE.encode()),
            "/large.txt": (200, {"Content-Type": "text/plain; charset=utf-8"}, LARGE.encode()),
            "/data.json": (200, {"Content-Type": "application/json"}, b'{"a": [1, 2]}'),
            "/logo.png": (200, {"Content-Type": "image/png"}, b"\x89PNG\r\n\x1a\n" + bytes(500)),
            "/to-metadata": (
                302,
                {"Location": "http://169.254.169.254/latest/meta-data/"},
                b"",
            ),
            "/to-loopback-v6": (301, {"Location": "http://[::1]:1/secret"}, b""),
            "/to-article": (302, {"Location": "/article"}, b""),
            "/loop": (302, {"Location": "/loop"}, b""),
            "/missing-page": (404, {"Content-Type": "text/html"}, b"<p>gone</p>"),
        }
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield base, routes, hits
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def site(web_site: tuple[str, dict[str, Route], list[str]]) -> str:
    return web_site[0]


def _registry(tmp_path: Path, options: WebOptions, mode: str = "yolo") -> ToolRegistry:
    return ToolRegistry(
        default_tools(tmp_path, web_options=options), policy=PermissionEngine(mode=mode)
    )


async def _fetch(reg: ToolRegistry, tmp_path: Path, **args: object) -> tuple[str, bool]:
    out = await reg.execute("web_fetch", json.dumps(args), ToolContext(workspace=tmp_path))
    return out.content, out.is_error


LOOPBACK = WebOptions(allow_hosts=("127.0.0.1",))


async def test_loopback_is_refused_by_default(tmp_path: Path, site: str) -> None:
    reg = _registry(tmp_path, WebOptions())
    text, is_error = await _fetch(reg, tmp_path, url=f"{site}/article")
    assert is_error
    assert "127.0.0.1" in text and "allow_hosts" in text and "allow_private" in text
    assert "Prefix caching" not in text


async def test_html_becomes_markdown_of_the_main_content(tmp_path: Path, site: str) -> None:
    reg = _registry(tmp_path, LOOPBACK)
    text, is_error = await _fetch(reg, tmp_path, url=f"{site}/article")
    assert not is_error, text
    assert text.startswith(f"URL: {site}/article\nContent-Type: text/html (HTTP 200)\n")
    assert "Title: Reasonix notes" in text
    assert "# Prefix caching" in text
    assert "**cached**" in text
    assert "[the API docs](https://api-docs.deepseek.com/)" in text
    assert "- keep the system prompt fixed" in text
    assert "def cached(prefix):" in text
    assert "| hit | 0.028 |" in text
    assert "tracking" not in text and "copyright footer" not in text
    # Deterministic: a second tool instance converts the page to the same bytes.
    again, _ = await _fetch(_registry(tmp_path, LOOPBACK), tmp_path, url=f"{site}/article")
    assert again == text


async def test_a_large_page_is_paged_with_offset(tmp_path: Path, site: str) -> None:
    reg = _registry(tmp_path, LOOPBACK)
    url = f"{site}/large.txt"
    first, is_error = await _fetch(reg, tmp_path, url=url, max_chars=50_000)
    assert not is_error
    total = len(LARGE)
    assert (
        f"Characters 0-30000 of {total}; more follows: "
        "call web_fetch (through more_tools) again with offset=30000" in first
    )
    pieces = [first.split("\n\n", 1)[1]]
    offset = 30_000
    while offset < total:
        page, is_error = await _fetch(reg, tmp_path, url=url, offset=offset, max_chars=30_000)
        assert not is_error
        assert f"Characters {offset}-{min(offset + 30_000, total)} of {total}" in page
        pieces.append(page.split("\n\n", 1)[1])
        offset += 30_000
    assert "".join(pieces) == LARGE
    assert "more follows" not in page


async def test_text_and_json_come_back_as_they_are(tmp_path: Path, site: str) -> None:
    reg = _registry(tmp_path, LOOPBACK)
    text, is_error = await _fetch(reg, tmp_path, url=f"{site}/data.json")
    assert not is_error
    assert "Content-Type: application/json" in text
    assert text.endswith('\n\n{"a": [1, 2]}')


async def test_a_binary_type_is_refused_with_its_type(tmp_path: Path, site: str) -> None:
    reg = _registry(tmp_path, LOOPBACK)
    text, is_error = await _fetch(reg, tmp_path, url=f"{site}/logo.png")
    assert is_error
    assert "image/png" in text and "not text" in text
    assert "PNG" not in text


async def test_a_redirect_to_a_private_address_is_refused(tmp_path: Path, site: str) -> None:
    reg = _registry(tmp_path, LOOPBACK)
    text, is_error = await _fetch(reg, tmp_path, url=f"{site}/to-metadata")
    assert is_error
    assert "169.254.169.254" in text and "non-public" in text
    # A loopback address other than the one allowed is refused too.
    text, is_error = await _fetch(reg, tmp_path, url=f"{site}/to-loopback-v6")
    assert is_error
    assert "::1 resolves to ::1" in text
    # An allowed redirect is followed, and the final URL reported.
    text, is_error = await _fetch(reg, tmp_path, url=f"{site}/to-article")
    assert not is_error
    assert text.startswith(f"URL: {site}/article\n")


async def test_redirect_loops_schemes_and_error_pages(tmp_path: Path, site: str) -> None:
    reg = _registry(tmp_path, LOOPBACK)
    text, is_error = await _fetch(reg, tmp_path, url=f"{site}/loop")
    assert is_error and "more than 5 redirects" in text
    text, is_error = await _fetch(reg, tmp_path, url="file:///etc/passwd")
    assert is_error and "only http and https" in text
    text, is_error = await _fetch(reg, tmp_path, url=f"{site}/missing-page")
    assert is_error and "(HTTP 404)" in text and "gone" in text


async def test_allow_private_opens_every_private_address(tmp_path: Path, site: str) -> None:
    reg = _registry(tmp_path, WebOptions(allow_private=True))
    text, is_error = await _fetch(reg, tmp_path, url=f"{site}/data.json")
    assert not is_error, text


async def test_web_fetch_asks_in_ask_mode_and_url_rules_decide(tmp_path: Path, site: str) -> None:
    reg = _registry(tmp_path, LOOPBACK, mode="ask")
    text, is_error = await _fetch(reg, tmp_path, url=f"{site}/data.json")
    assert is_error and "needs approval" in text
    assert f"web_fetch({site}/*)" in text  # the suggested rule names the site
    engine = PermissionEngine(mode="ask", allow=[f"web_fetch({site}/*)"], deny=["web(*/logo.png)"])
    reg = ToolRegistry(default_tools(tmp_path, web_options=LOOPBACK), policy=engine)
    text, is_error = await _fetch(reg, tmp_path, url=f"{site}/data.json")
    assert not is_error, text
    text, is_error = await _fetch(reg, tmp_path, url=f"{site}/logo.png")
    assert is_error and "deny rule" in text
    text, is_error = await _fetch(reg, tmp_path, url="http://127.0.0.2:9/other")
    assert is_error and "needs approval" in text


async def test_size_and_time_limits(tmp_path: Path, site: str) -> None:
    small = WebOptions(allow_hosts=("127.0.0.1",), max_bytes=2048)
    text, is_error = await _fetch(_registry(tmp_path, small), tmp_path, url=f"{site}/large.txt")
    assert not is_error
    assert "Note: the download stopped at 2048 bytes ([web] max_bytes)" in text
    assert "of 2048" in text
    quick = WebOptions(allow_hosts=("127.0.0.1",), timeout=1)
    text, is_error = await _fetch(_registry(tmp_path, quick), tmp_path, url=f"{site}/slow")
    assert is_error and "gave up" in text and "[web] timeout" in text


def test_address_policy_covers_mapped_and_special_ranges() -> None:
    policy = AddressPolicy()
    for blocked in ("127.0.0.1", "10.1.2.3", "169.254.169.254", "100.64.0.1", "::1",
                    "::ffff:127.0.0.1", "fe80::1", "fd00::1", "0.0.0.0", "224.0.0.1",
                    "2002:7f00:1::1"):  # fmt: skip
        assert not policy.address_allowed(ipaddress.ip_address(blocked)), blocked
    assert policy.address_allowed(ipaddress.ip_address("93.184.216.34"))
    assert policy.address_allowed(ipaddress.ip_address("2606:4700::1111"))
    narrow = AddressPolicy(allow_hosts=("192.168.0.0/16", "intranet.example"))
    assert narrow.address_allowed(ipaddress.ip_address("192.168.4.5"))
    assert not narrow.address_allowed(ipaddress.ip_address("10.0.0.1"))
    assert narrow.host_allowed("INTRANET.example.")


def test_address_exceptions_come_from_the_user_config_only(tmp_path: Path) -> None:
    user = tmp_path / "user.toml"
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "reasonix.toml").write_text(
        '[web]\nallow_private = true\nallow_hosts = ["127.0.0.1"]\ntimeout = 5\n'
    )
    config = load_config(proj, user_config=user, environ={})
    assert config.web.allow_private is False
    assert config.web.allow_hosts == ()
    assert config.web.timeout == 5  # a project may tighten the limits
    user.write_text('[web]\nallow_hosts = ["127.0.0.1", "10.0.0.0/8"]\n')
    config = load_config(proj, user_config=user, environ={})
    assert config.web.allow_hosts == ("127.0.0.1", "10.0.0.0/8")
    assert config.provenance["web.allow_hosts"] == f"user:{user}"


@pytest.mark.slow
def test_web_fetch_through_the_cli_sees_the_page(project: Project, site: str) -> None:
    """The model's web_fetch call runs in ``reasonix run`` with the user's allow list, and the
    markdown reaches the model in the next request; without the allow list it is refused."""
    project.write_user_config('[web]\nallow_hosts = ["127.0.0.1"]\n')
    project.ex.push(
        Reply.call("web_fetch", {"url": f"{site}/article"}),
        Reply.text("The page is about prefix caching."),
    )
    proc = project.run("run", "--yes", "read the page")
    assert proc.returncode == 0, proc.stderr
    result = project.ex.requests[1].messages[-1]
    assert result["role"] == "tool"
    assert "# Prefix caching" in result["content"]
    project.write_user_config()  # no [web] allow list any more
    project.ex.push(
        Reply.call("web_fetch", {"url": f"{site}/article"}),
        Reply.text("Refused."),
    )
    proc = project.run("run", "--yes", "read the page")
    assert proc.returncode == 0, proc.stderr
    refused = project.ex.requests[3].messages[-1]
    assert "allow_hosts" in refused["content"] and "Prefix caching" not in refused["content"]


async def test_later_pages_come_from_the_same_copy(
    web_site: tuple[str, dict[str, Route], list[str]],
) -> None:
    site, routes, hits = web_site
    fetcher = WebFetchTool(LOOPBACK)
    ctx = ToolContext(workspace=Path.cwd())
    first = await fetcher.web_fetch(ctx, f"{site}/large.txt", max_chars=100)
    routes["/large.txt"] = (200, {"Content-Type": "text/plain"}, b"changed meanwhile")
    second = await fetcher.web_fetch(ctx, f"{site}/large.txt", offset=100, max_chars=100)
    assert not first.is_error and not second.is_error
    assert first.content.split("\n\n", 1)[1] + second.content.split("\n\n", 1)[1] == LARGE[:200]
    assert hits == ["/large.txt"]


async def _chunks(data: bytes, size: int = 7) -> AsyncIterator[bytes]:
    for i in range(0, len(data), size):
        yield data[i : i + size]


@pytest.mark.parametrize(
    ("encoding", "encode"),
    [
        ("gzip", gzip.compress),
        ("x-gzip", gzip.compress),
        ("deflate", zlib.compress),  # the standard's zlib-wrapped form
        ("deflate", lambda d: zlib.compress(d)[2:-4]),  # the raw form some servers send
        ("gzip, deflate", lambda d: zlib.compress(gzip.compress(d))),
        ("identity", lambda d: d),
        ("", lambda d: d),
    ],
)
async def test_bodies_decode_exactly_in_small_pieces(encoding: str, encode: Any) -> None:
    text = LARGE.encode()
    body, cut = await decoded_body(_chunks(encode(text)), encoding, len(text) + 1)
    assert body == text and not cut
    body, cut = await decoded_body(_chunks(encode(text)), encoding, 1000)
    assert body == text[:1000] and cut


async def test_a_corrupt_body_is_an_error() -> None:
    with pytest.raises(BodyError, match="gzip data is corrupt"):
        await decoded_body(_chunks(b"not gzip at all"), "gzip", 1000)


async def test_a_redirect_out_of_the_allow_rule_asks_about_the_hop(
    tmp_path: Path, web_site: tuple[str, dict[str, Route], list[str]]
) -> None:
    """The first URL is allowed by a rule; where it redirects is asked about as a call of its
    own (the question names the hop), and a "no" leaves the hop unfetched."""
    site, _, hits = web_site
    for answer, fetched in (
        (ApprovalAnswer.allow_once(), True),
        (ApprovalAnswer.deny("no"), False),
    ):
        approver = ScriptedApprover(answer)
        engine = PermissionEngine(mode="ask", allow=[f"web_fetch({site}/to-*)"], approver=approver)
        reg = ToolRegistry(default_tools(tmp_path, web_options=LOOPBACK), policy=engine)
        hits.clear()
        text, is_error = await _fetch(reg, tmp_path, url=f"{site}/to-article")
        assert [r.subject for r in approver.requests] == [f"{site}/article"]
        assert ("# Prefix caching" in text) is fetched and is_error is not fetched, text
        assert hits == (["/to-article", "/article"] if fetched else ["/to-article"])
        if not fetched:
            assert f"it redirects to {site}/article" in text and "declined" in text
