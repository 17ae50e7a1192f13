"""web_search through the real CLI against the fake DeepSeek server (which serves the Search
API too): results reach the model, one is read with web_fetch, the price shows in the JSON
result and in /cost; a failed or empty search is free; search off removes the tool; rules and
ask mode apply as for web_fetch."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from reasonix.testing import FakeDeepSeekServer, Reply
from reasonix.testing.fake_server import RecordedRequest
from reasonix.testing.project import fake_project_toml
from reasonix.tools.builtin.web_search import SEARCH_PRICE_USD
from tests.support.cli import cli_env

pytestmark = pytest.mark.slow

PAGE = "<html><title>Release notes</title><body><p>Version 4.1 ships vision.</p></body></html>"


@pytest.fixture
def site() -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            data = PAGE.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def project(tmp_path: Path, url: str, extra: str = "") -> tuple[Path, dict[str, str]]:
    repo = tmp_path / "repo"
    repo.mkdir()
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    web = "[web]\nallow_private = true\n" + extra
    (cfg / "config.toml").write_text(fake_project_toml(url, url, max_steps=8, extra=web))
    return repo, cli_env(tmp_path / "data", cfg)


def run(repo: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reasonix", "run", *args],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        stdin=subprocess.DEVNULL,
    )


def tool_names(request: RecordedRequest) -> list[str]:
    return [t["function"]["name"] for t in request.body.get("tools") or []]


def search_call(query: str) -> Reply:
    return Reply.call("more_tools", {"name": "web_search", "arguments": {"query": query}})


def test_a_search_turn_shows_results_follows_one_and_is_priced(tmp_path: Path, site: str) -> None:
    def results(query: str, count: int) -> list[dict[str, Any]]:
        return [
            {
                "title": "Release notes",
                "url": f"{site}/notes",
                "summary": "What 4.1 ships.",
                "date": "2026-11-15",
            },
        ]

    with FakeDeepSeekServer(search_results=results) as srv:
        srv.push(
            search_call("deepseek 4.1 release"),
            Reply.call("more_tools", {"name": "web_fetch", "arguments": {"url": f"{site}/notes"}}),
            Reply.text("4.1 ships vision."),
        )
        repo, env = project(tmp_path, srv.base_url)
        proc = run(repo, env, "--yes", "--output-format", "json", "what does 4.1 ship?")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        srv.assert_exhausted()
        assert [s.body["query"] for s in srv.searches] == ["deepseek 4.1 release"]
        assert srv.requests[0].body  # the tool hides behind more_tools, as web_fetch does
        assert "web_search" not in tool_names(srv.requests[0])
        found = srv.requests[1].messages[-1]["content"]
        assert "Release notes" in found and f"{site}/notes" in found and "2026-11-15" in found
        assert "Version 4.1 ships vision." in srv.requests[2].messages[-1]["content"]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["usage"]["web_search"]["requests"] == 1
    assert result["usage"]["web_search"]["cost_usd"] == pytest.approx(SEARCH_PRICE_USD)
    assert result["cost_usd"]["web_search"] == pytest.approx(SEARCH_PRICE_USD)
    assert result["cost_usd"]["total"] > SEARCH_PRICE_USD

    # /cost in a continued session lists the search on its own line
    proc = run(repo, env, "-c", "/cost")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    line = next((r for r in proc.stdout.splitlines() if r.startswith("web_search")), proc.stdout)
    assert f"{SEARCH_PRICE_USD:.6f}" in line


def test_failed_and_empty_searches_are_not_billed(tmp_path: Path) -> None:
    with FakeDeepSeekServer(search_results=lambda q, n: []) as srv:
        srv.search_faults.append(500)
        srv.push(search_call("first"), search_call("second"), Reply.text("nothing found"))
        repo, env = project(tmp_path, srv.base_url)
        proc = run(repo, env, "--yes", "--output-format", "json", "search twice")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "HTTP 500" in srv.requests[1].messages[-1]["content"]
        assert "No results" in srv.requests[2].messages[-1]["content"]
        assert not any(s.billed for s in srv.searches)
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["usage"]["web_search"] == {**result["usage"]["web_search"], "requests": 2}
    assert result["usage"]["web_search"]["cost_usd"] == 0


def test_search_off_removes_the_tool(tmp_path: Path) -> None:
    with FakeDeepSeekServer([Reply.call("more_tools", {}), Reply.text("ok")]) as srv:
        repo, env = project(tmp_path, srv.base_url, 'search = "off"\n')
        assert run(repo, env, "--yes", "hi").returncode == 0
        listing = srv.requests[1].messages[-1]["content"]
        more = next(
            t for t in srv.requests[0].body["tools"] if t["function"]["name"] == "more_tools"
        )
    assert "web_search" not in listing and "web_fetch" in listing
    assert "web_search" not in json.dumps(more)


def test_a_deny_rule_and_ask_mode_apply_to_search(tmp_path: Path) -> None:
    with FakeDeepSeekServer() as srv:
        srv.push(search_call("secret plans"), Reply.text("refused"))
        repo, env = project(tmp_path, srv.base_url, '[permissions]\ndeny = ["web_search(*)"]\n')
        assert run(repo, env, "--yes", "search").returncode in (0, 3)
        assert srv.searches == []
        assert "web_search" in srv.requests[1].messages[-1]["content"]
