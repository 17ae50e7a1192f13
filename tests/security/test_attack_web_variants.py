"""Variants against ``web_fetch`` after its fixes (issue 24's class 6).

1. The deprecated IPv6 site-local range ``fec0::/10`` is private, but Python's ``is_global``
   calls it global, so ``http://[fec0::1]/`` passed the address policy to a connection attempt.
   Fixed in this module's commit (refused like the tunnels). Control: allowing private
   addresses lets the same URL through to the connection attempt.

2. The HTML conversion as a memory amplifier: the body is capped (``[web]
   max_bytes``) and decoded within the cap, but what the converter builds from it is not.
   Twenty thousand nested ``<blockquote>`` elements with a line in each — 600 KB of HTML, under
   8 KB gzipped on the wire — make the converter build every line's ``> > > …`` prefix, and the
   agent's peak memory passes a gigabyte for one page (several fetches run at once, one per
   tool call of a step). A page the model is told to read is enough.

   Worked on main when written; recorded as a strict xfail. Control: the same bytes served as
   ``text/plain`` (no conversion) keep the agent's peak memory small, so the measurement sees
   the conversion and not the download.
"""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from reasonix.testing import Reply
from tests.security.support import Attack, Lab, lab

__all__ = ["lab"]

pytestmark = pytest.mark.slow

MiB = 1 << 20
DEPTH = 20_000
PAGE = ("<html><body>" + "<blockquote>line<br>" * DEPTH + "</blockquote>" * DEPTH).encode()


@pytest.fixture
def site() -> Iterator[str]:
    body = gzip.compress(PAGE, 9)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            kind = "text/html" if self.path == "/page.html" else "text/plain"
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _peak(lab: Lab, url: str) -> tuple[int, str]:
    """One ``reasonix run`` whose model fetches ``url``: its peak resident memory and the
    tool result."""
    lab.write_user_config(
        '[web]\nallow_hosts = ["127.0.0.1"]\n[permissions]\nallow = ["web_fetch"]\n'
    )
    lab.ex.push(Reply.call("web_fetch", {"url": url}), Reply.text("done"))
    with (lab.tmp / "run.out").open("w") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "reasonix", "run", "--no-planner", "read the page"],
            cwd=lab.root,
            env=lab.env(),
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
        _, _, usage = os.wait4(proc.pid, 0)
        proc.returncode = 0
    result = str(lab.ex.requests[-1].messages[-1].get("content", ""))
    return usage.ru_maxrss * 1024, result


@pytest.mark.xfail(
    strict=True,
    reason="web_fetch caps the body but not what the HTML converter builds from it: 20,000 "
    "nested blockquotes (600 KB, under 8 KB gzipped) take the agent past a gigabyte",
)
def test_a_page_of_nested_quotes_does_not_fill_the_agents_memory(lab: Lab, site: str) -> None:
    assert len(gzip.compress(PAGE, 9)) < 8192
    peak, result = _peak(lab, f"{site}/page.html")
    assert "line" in result, result
    assert peak < 512 * MiB, f"peak memory {peak / MiB:.0f} MiB"


def test_control_the_same_bytes_as_text_stay_small(lab: Lab, site: str) -> None:
    peak, result = _peak(lab, f"{site}/page.txt")
    assert "blockquote" in result, result
    assert peak < 512 * MiB, f"peak memory {peak / MiB:.0f} MiB"


SITE_LOCAL = "http://[fec0::1]:9/"


def test_a_site_local_ipv6_address_is_refused(lab: Lab) -> None:
    lab.write_user_config('[permissions]\nallow = ["web_fetch"]\n')
    out = lab.attack([Attack("site-local", "web_fetch", {"url": SITE_LOCAL})])
    assert "non-public address" in out.results[0], out.results


def test_control_allowing_private_addresses_lets_it_through(lab: Lab) -> None:
    lab.write_user_config('[permissions]\nallow = ["web_fetch"]\n[web]\nallow_private = true\n')
    out = lab.attack([Attack("site-local", "web_fetch", {"url": SITE_LOCAL})])
    assert "non-public address" not in out.results[0], out.results
