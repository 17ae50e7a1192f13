"""``web_fetch`` against servers on loopback, through the real ``reasonix run``: a redirect out
of what an allow rule covers, a body whose layered ``Content-Encoding`` inflates past every cap,
and IPv6 forms that carry a private, loopback or metadata IPv4 address.

Worked before the fixes in this module's commit:

- an allow rule for one site covered wherever it redirected: ``web_fetch(http://A/*)`` fetched
  the page of another site B it redirected to, and ``web_fetch(http://A/docs/*)`` a page of A
  outside ``/docs``, in a headless run that asks no one; a deny rule did not stop a hop;
- ``Content-Encoding: gzip, gzip`` on an 800-byte body: the HTTP client inflated it whole,
  256 MiB in memory, before the size cap counted a byte (the CLI's peak memory measured);
- ``[::7f00:1]`` (IPv4-compatible), ``[::ffff:0:7f00:1]`` (IPv4-translated),
  ``[64:ff9b::a9fe:a9fe]`` (NAT64 of the cloud metadata address) and ``[64:ff9b:1::a00:1]``
  (NAT64 local use) passed the address policy; 6to4, Teredo and IPv4-mapped forms were refused
  already.

Each has its control: the redirect target fetched when a rule does cover it; the same body read
the naive way (the HTTP client decoding it) holding the whole 256 MiB; the same addresses let
through to a connection attempt when the user's config allows private addresses.
"""

from __future__ import annotations

import gzip
import ipaddress
import json
import os
import subprocess
import sys
import threading
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from reasonix.testing import Reply
from reasonix.tools.builtin.web import AddressPolicy
from reasonix.tools.builtin.web_body import BodyError, layers_for
from tests.security.support import Attack, Lab, lab, record

__all__ = ["lab"]

SECRET_PAGE = "internal-page-behind-the-redirect-6c1f"
MiB = 1 << 20
BOMB_MIB = 256


def _bomb() -> bytes:
    """BOMB_MIB of zeros, gzipped twice: well under a kilobyte on the wire."""
    inner = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zeros = bytes(MiB)
    stream = b"".join(inner.compress(zeros) for _ in range(BOMB_MIB)) + inner.flush()
    return gzip.compress(stream, 9)


class Site:
    """A loopback HTTP server with fixed routes: (status, headers, body) per path."""

    def __init__(self) -> None:
        site = self
        self.routes: dict[str, tuple[int, dict[str, str], bytes]] = {}
        self.hits: list[str] = []

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                site.hits.append(self.path)
                status, headers, body = site.routes.get(self.path, (404, {}, b"not found"))
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def sites() -> Iterator[tuple[Site, Site]]:
    a, b = Site(), Site()
    text = {"Content-Type": "text/plain"}
    b.routes["/secret"] = (200, text, SECRET_PAGE.encode())
    a.routes["/private"] = (200, text, SECRET_PAGE.encode())
    a.routes["/docs/page"] = (200, text, b"public docs")
    a.routes["/docs/to-b"] = (302, {"Location": f"{b.base}/secret"}, b"")
    a.routes["/docs/to-private"] = (302, {"Location": "/private"}, b"")
    try:
        yield a, b
    finally:
        a.close()
        b.close()


def _config(lab: Lab, allow: list[str], deny: tuple[str, ...] = ()) -> None:
    lab.write_user_config(
        '[web]\nallow_hosts = ["127.0.0.1"]\n'
        f"[permissions]\nallow = {json.dumps(allow)}\ndeny = {json.dumps(list(deny))}\n"
    )


@pytest.mark.slow
def test_redirects_are_checked_against_the_rules_at_every_hop(
    lab: Lab, sites: tuple[Site, Site], request: pytest.FixtureRequest
) -> None:
    a, b = sites
    _config(lab, [f"web_fetch({a.base}/docs/*)"])
    attacks = [
        Attack("redirect to another site", "web_fetch", {"url": f"{a.base}/docs/to-b"}),
        Attack("redirect out of the rule", "web_fetch", {"url": f"{a.base}/docs/to-private"}),
        Attack(
            "through more_tools",
            "more_tools",
            {"name": "web_fetch", "arguments": {"url": f"{a.base}/docs/to-b"}},
        ),
    ]
    outcome = lab.attack(attacks)  # headless, mode ask: no one to approve a hop
    worked = 0
    for attack, result in zip(attacks, outcome.results, strict=False):
        worked += SECRET_PAGE in result
        assert SECRET_PAGE not in result, attack.name
        assert "redirects to" in result and "permission rules do not allow" in result, result
        assert "no one can approve it in this non-interactive run" in result
    assert b.hits == [] and "/private" not in a.hits
    # What the rule covers still comes back.
    ok = lab.attack([Attack("covered", "web_fetch", {"url": f"{a.base}/docs/page"})])
    assert "public docs" in ok.results[0]
    record(request, "web_fetch redirects", len(attacks), worked)


@pytest.mark.slow
def test_a_deny_rule_stops_a_hop_even_in_yolo(lab: Lab, sites: tuple[Site, Site]) -> None:
    a, b = sites
    _config(lab, [], deny=(f"web_fetch({b.base}/*)",))
    out = lab.attack([Attack("hop", "web_fetch", {"url": f"{a.base}/docs/to-b"})], "--mode", "yolo")
    assert SECRET_PAGE not in out.results[0] and "permission rules do not allow" in out.results[0]
    assert b.hits == []


@pytest.mark.slow
def test_control_a_rule_that_covers_the_hop_follows_it(lab: Lab, sites: tuple[Site, Site]) -> None:
    a, b = sites
    _config(lab, [f"web_fetch({a.base}/*)", f"web_fetch({b.base}/*)"])
    outcome = lab.attack(
        [
            Attack("to b", "web_fetch", {"url": f"{a.base}/docs/to-b"}),
            Attack("to private", "web_fetch", {"url": f"{a.base}/docs/to-private"}),
        ]
    )
    assert all(SECRET_PAGE in r for r in outcome.results[:2]), outcome.results
    assert b.hits == ["/secret"]


def _measured_run(lab: Lab, *args: str) -> tuple[str, int]:
    """``reasonix *args`` as a child of its own: its output and its peak resident memory."""
    out = lab.tmp / "measured.out"
    with out.open("w") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "reasonix", *args],
            cwd=lab.root,
            env=lab.env(),
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
        _, _, usage = os.wait4(proc.pid, 0)
        proc.returncode = 0
    return out.read_text(), usage.ru_maxrss * 1024


@pytest.fixture(scope="module")
def bomb() -> bytes:
    return _bomb()


@pytest.mark.slow
def test_layered_encodings_are_decoded_within_the_cap(
    lab: Lab, sites: tuple[Site, Site], bomb: bytes, request: pytest.FixtureRequest
) -> None:
    a, _ = sites
    a.routes["/bomb"] = (
        200,
        {"Content-Type": "text/plain", "Content-Encoding": "gzip, gzip"},
        bomb,
    )
    a.routes["/plain"] = (200, {"Content-Type": "text/plain"}, b"a plain page\n")
    assert len(bomb) < 4096
    _config(lab, [f"web_fetch({a.base}/*)"])
    # The same run fetching a small page: what the process takes without the bomb (it grows
    # with the product and with the machine, so the bound is on what the bomb adds).
    lab.ex.push(Reply.call("web_fetch", {"url": f"{a.base}/plain"}), Reply.text("done"))
    _, baseline = _measured_run(lab, "run", "--no-planner", "--output-format", "json", "probe")
    lab.ex.push(Reply.call("web_fetch", {"url": f"{a.base}/bomb"}), Reply.text("done"))
    text, peak = _measured_run(lab, "run", "--no-planner", "--output-format", "json", "probe")
    result = str(lab.ex.requests[-1].messages[-1].get("content", ""))
    assert "the download stopped at 5000000 bytes" in result, (result, text)
    added = peak - baseline
    worked = added > BOMB_MIB * MiB // 2
    assert not worked, f"the bomb added {added / MiB:.0f} MiB (baseline {baseline / MiB:.0f} MiB)"
    record(request, "web_fetch encodings", 1, int(worked))


@pytest.mark.slow
def test_control_the_same_body_decoded_by_the_http_client_fills_memory(
    lab: Lab, sites: tuple[Site, Site], bomb: bytes
) -> None:
    """What ``web_fetch`` did before: the HTTP client's own decoding of the same response."""
    a, _ = sites
    a.routes["/bomb"] = (
        200,
        {"Content-Type": "text/plain", "Content-Encoding": "gzip, gzip"},
        bomb,
    )
    script = (
        "import asyncio, httpx, sys\n"
        "async def main():\n"
        "    async with httpx.AsyncClient() as c:\n"
        "        async with c.stream('GET', sys.argv[1]) as r:\n"
        "            async for chunk in r.aiter_bytes():\n"
        "                if len(chunk) > 5_000_000: print('one chunk', len(chunk)); return\n"
        "asyncio.run(main())\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script, f"{a.base}/bomb"], stdout=subprocess.PIPE
    )
    _, _, usage = os.wait4(proc.pid, 0)
    assert proc.stdout is not None
    said = proc.stdout.read().decode()
    proc.stdout.close()
    proc.returncode = 0
    assert "one chunk" in said
    assert usage.ru_maxrss * 1024 > BOMB_MIB * MiB


def test_encoding_layers_and_names_are_bounded() -> None:
    assert len(layers_for("gzip, gzip")) == 2
    assert layers_for("identity") == [] and layers_for("") == []
    for header, message in (
        ("gzip, gzip, gzip", "at most 2 encodings"),
        ("deflate, gzip, identity, gzip", "at most 2 encodings"),
        ("br", "'br', which web_fetch does not decode"),
        ("gzip, zstd", "'zstd'"),
        ("compress", "'compress'"),
    ):
        with pytest.raises(BodyError, match=message):
            layers_for(header)


#: IPv6 forms of blocked IPv4 addresses, with the IPv4 address each stands for.
EMBEDDED = {
    "::7f00:1": "127.0.0.1",  # IPv4-compatible
    "::a9fe:a9fe": "169.254.169.254",
    "::ffff:7f00:1": "127.0.0.1",  # IPv4-mapped
    "::ffff:0:a00:1": "10.0.0.1",  # IPv4-translated
    "64:ff9b::7f00:1": "127.0.0.1",  # NAT64, well-known prefix
    "64:ff9b::a9fe:a9fe": "169.254.169.254",
    "64:ff9b::c0a8:101": "192.168.1.1",
    "64:ff9b:1::a00:1": "10.0.0.1",  # NAT64, local use (refused whatever it carries)
    "64:ff9b:1:a9fe:a9:fe00::": "169.254.169.254",
    "2002:7f00:1::1": "127.0.0.1",  # 6to4
    "2002:a9fe:a9fe::": "169.254.169.254",
    "2001:0:4136:e378:8000:63bf:3fff:fdd2": "192.0.2.45",  # Teredo
    "::ffff:c000:c0": "192.0.0.192",  # a cloud metadata address Python 3.11 calls global
    "64:ff9b::c000:c0": "192.0.0.192",
    "2002:c058:6301::": "192.88.99.1",  # the retired 6to4 relay anycast range
}
#: The same forms of public addresses: allowed (the control: judged, not refused wholesale).
PUBLIC_EMBEDDED = ("::ffff:808:808", "64:ff9b::808:808", "2002:808:808::1", "::ffff:0:808:808")


@pytest.mark.parametrize(("v6", "v4"), sorted(EMBEDDED.items()))
def test_ipv6_forms_of_blocked_addresses_are_refused(v6: str, v4: str) -> None:
    policy = AddressPolicy()
    assert not policy.address_allowed(ipaddress.ip_address(v4))
    assert not policy.address_allowed(ipaddress.ip_address(v6)), v6
    # allow_hosts naming the IPv4 network covers its IPv6 forms (tunnels excepted).
    narrow = AddressPolicy(allow_hosts=(f"{v4}/32",))
    if not v6.startswith(("64:ff9b:1:", "2001:0:")):
        assert narrow.address_allowed(ipaddress.ip_address(v6)), v6


@pytest.mark.parametrize("v6", PUBLIC_EMBEDDED)
def test_control_ipv6_forms_of_public_addresses_pass(v6: str) -> None:
    assert AddressPolicy().address_allowed(ipaddress.ip_address(v6))


@pytest.mark.slow
def test_embedded_forms_through_the_cli(
    lab: Lab, sites: tuple[Site, Site], request: pytest.FixtureRequest
) -> None:
    """The new forms (not connectable here) and the loopback server's address spelled as an
    IPv4-mapped IPv6 address and as the legacy IPv4 forms the resolver accepts: all refused;
    the control lets them through with private addresses allowed, and the connectable ones
    fetch the server's page."""
    a, _ = sites
    port = a.server.server_address[1]
    unreachable = ["::7f00:1", "::ffff:0:7f00:1", "64:ff9b::a9fe:a9fe", "64:ff9b:1::a00:1"]
    reachable = ["[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "2130706433", "0x7f.1", "127.1"]
    attacks = [Attack(u, "web_fetch", {"url": f"http://[{u}]:9/x"}) for u in unreachable]
    attacks += [Attack(h, "web_fetch", {"url": f"http://{h}:{port}/private"}) for h in reachable]
    lab.write_user_config('[permissions]\nallow = ["web_fetch"]\n')
    refused = lab.attack(attacks)
    worked = 0
    for attack, result in zip(attacks, refused.results, strict=False):
        blocked = "non-public address" in result and SECRET_PAGE not in result
        worked += not blocked
        assert blocked, (attack.name, result)
    assert a.hits == []
    # Control: with private addresses allowed the same URLs are tried, and the loopback
    # server's own address in its other spellings reaches it.
    lab.write_user_config('[permissions]\nallow = ["web_fetch"]\n[web]\nallow_private = true\n')
    tried = lab.attack(attacks)
    for attack, result in zip(attacks, tried.results, strict=False):
        assert "non-public address" not in result, (attack.name, result)
        if attack.name in reachable:
            assert SECRET_PAGE in result, (attack.name, result)
        else:
            assert "could not fetch" in result, (attack.name, result)
    record(request, "web_fetch addresses", len(attacks), worked)
