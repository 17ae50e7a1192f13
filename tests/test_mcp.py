"""The MCP manager against real servers: ``mcp-server-time`` and ``mcp-server-git`` from PyPI,
the SDK's own streamable HTTP server on loopback, and a small raw JSON-RPC fixture server for the
failure modes real servers do not show on demand (slow start, garbage on stdout, crashes,
``tools/list_changed``)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tomllib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio

from reasonix.events import CollectingSink, ErrorEvent, NoticeEvent
from reasonix.mcp import (
    McpManager,
    McpServerConfig,
    ServerState,
    servers_from_mcp_json,
    servers_from_toml,
)
from reasonix.tools.registry import TOOL_NAME_RE, ToolContext, ToolRegistry
from tests.support.mcp import FAKE, fake_server

pytestmark = pytest.mark.asyncio(loop_scope="module")

BIN = Path(sys.executable).parent
FIXTURES = Path(__file__).parent / "fixtures" / "mcp"


def _exe(name: str) -> str:
    found = shutil.which(name, path=str(BIN))
    assert found is not None, f"{name} is not installed in {BIN}"
    return found


@pytest.fixture(scope="module")
def git_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("repo")
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid"}
    env |= {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "README.md").write_text("hello\n")
    subprocess.run(["git", "-C", str(repo), "add", "README.md"], check=True, env=env)
    subprocess.run(["git", "-C", str(repo), "commit", "-qm", "first"], check=True, env=env)
    (repo / "new.txt").write_text("untracked\n")
    return repo


@pytest.fixture(scope="module")
def sink() -> CollectingSink:
    return CollectingSink()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def manager(
    git_repo: Path, sink: CollectingSink, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[McpManager]:
    """One manager shared by the tests below: three working servers and four broken ones, all
    started together (the broken ones must not hold the others up)."""
    configs = [
        McpServerConfig("time", command=_exe("mcp-server-time"), args=("--local-timezone", "UTC")),
        McpServerConfig(
            "git",
            command=_exe("mcp-server-git"),
            args=("--repository", str(git_repo)),
            trust_annotations=True,
        ),
        # Generous bounds: a loaded machine can take seconds to start Python or answer a call.
        fake_server("fake", call_timeout=5.0),
        McpServerConfig("missing", command="reasonix-no-such-mcp-server"),
        fake_server("slow", "--sleep", "30", startup_timeout=1.0),
        fake_server("garbage", "--garbage", startup_timeout=5.0),  # its error quotes the garbage
        fake_server("crash", "--crash"),
        fake_server("badlist", "--bad-tools"),
        McpServerConfig("off", command="never-started", enabled=False),
    ]
    mgr = McpManager(configs, tmp_path_factory.mktemp("mcp-logs"), sink)
    await mgr.start()
    try:
        yield mgr
    finally:
        await mgr.aclose()


def _status(mgr: McpManager, name: str) -> object:
    return next(s for s in mgr.status() if s.name == name)


def _ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(workspace=tmp_path)


# ---------------------------------------------------------------------------------------------
# Start-up and status


@pytest.mark.slow
async def test_working_servers_run_and_broken_ones_are_reported(
    manager: McpManager, sink: CollectingSink
) -> None:
    by_name = {s.name: s for s in manager.status()}
    for name in ("time", "git", "fake"):
        assert by_name[name].state is ServerState.RUNNING, by_name[name].line()
        assert by_name[name].tool_count > 0 and by_name[name].pid is not None
    assert by_name["off"].state is ServerState.DISABLED

    failed = {n: by_name[n] for n in ("missing", "slow", "garbage", "crash")}
    assert all(s.state is ServerState.FAILED for s in failed.values())
    assert "command not found" in (failed["missing"].error or "")
    assert "did not answer within 1 s" in (failed["slow"].error or "")
    garbage_error = failed["garbage"].error or ""
    assert "not JSON-RPC" in garbage_error and "Starting server on stdout" in garbage_error
    crash_error = failed["crash"].error or ""
    assert "exited with code 3 during start-up" in crash_error
    assert "cannot open the database" in crash_error  # the stderr tail
    assert "failed" in failed["crash"].line() and "log:" in failed["crash"].line()
    # A protocol-level failure is reported as such, not as the exit our shutdown caused.
    badlist = by_name["badlist"]
    assert badlist.state is ServerState.FAILED
    assert "ValidationError" in (badlist.error or "") and "exited" not in (badlist.error or "")

    reported = {e.message.split("'")[1] for e in sink.of_type(ErrorEvent) if e.kind == "error"}
    assert {"missing", "slow", "garbage", "crash", "badlist"} <= reported
    assert all(e.role == "mcp" for e in sink.of_type(ErrorEvent))


async def test_server_stderr_goes_to_a_log_file_per_server(manager: McpManager) -> None:
    crash = next(s for s in manager.status() if s.name == "crash")
    assert crash.log_path is not None
    log = crash.log_path.read_text()
    assert "cannot open the database" in log
    assert "--- reasonix: starting" in log
    garbage_log = next(s for s in manager.status() if s.name == "garbage").log_path
    assert garbage_log is not None
    assert "not JSON-RPC on stdout" in garbage_log.read_text()


async def test_tools_are_named_sanitised_and_annotated(manager: McpManager) -> None:
    tools = {t.name: t for t in manager.tools()}
    assert list(tools) == sorted(tools)
    assert {"mcp__time__get_current_time", "mcp__time__convert_time"} <= set(tools)
    assert "mcp__git__git_status" in tools and "mcp__fake__echo" in tools
    assert not any(name.startswith(("mcp__slow", "mcp__crash", "mcp__garbage")) for name in tools)
    for t in tools.values():
        assert TOOL_NAME_RE.match(t.name)
        assert t.category == "mcp"
        assert t.parameters["type"] == "object" and "properties" in t.parameters
        assert "$schema" not in json.dumps(dict(t.parameters))
    status = tools["mcp__git__git_status"]
    # readOnlyHint from a server the user trusts
    assert status.read_only and not status.destructive
    assert tools["mcp__fake__slow"].destructive is False  # destructiveHint: false
    assert tools["mcp__fake__fail"].destructive is True  # unannotated: the spec's default
    defs = tools["mcp__fake__defs"].parameters
    assert defs["properties"]["item"]["properties"]["tags"] == {
        "items": {"type": "string"},
        "type": "array",
    }


# ---------------------------------------------------------------------------------------------
# Calls


async def test_successful_call_through_the_registry(manager: McpManager, tmp_path: Path) -> None:
    registry = ToolRegistry(manager.tools())
    result = await registry.execute(
        "mcp__time__get_current_time", json.dumps({"timezone": "UTC"}), _ctx(tmp_path)
    )
    assert not result.is_error, result.content
    data = json.loads(result.content)  # text mirrors structuredContent, so it is not repeated
    assert data["timezone"] == "UTC" and "datetime" in data


async def test_git_server_answers_about_the_repository(
    manager: McpManager, git_repo: Path, tmp_path: Path
) -> None:
    registry = ToolRegistry(manager.tools())
    result = await registry.execute(
        "mcp__git__git_status", json.dumps({"repo_path": str(git_repo)}), _ctx(tmp_path)
    )
    assert not result.is_error, result.content
    assert "new.txt" in result.content


async def test_is_error_result_is_an_error_tool_result(manager: McpManager) -> None:
    result = await manager.call_tool("time", "get_current_time", {"timezone": "Not/AZone"})
    assert result.is_error
    assert "Invalid timezone" in result.content


async def test_unknown_tool_json_rpc_error_becomes_a_clear_tool_error(
    manager: McpManager,
) -> None:
    result = await manager.call_tool("time", "no_such_tool", {})
    assert result.is_error
    assert "MCP server 'time' rejected the call to no_such_tool" in result.content
    assert "Unknown tool" in result.content and "-32602" in result.content


async def test_rich_content_is_described(manager: McpManager) -> None:
    result = await manager.call_tool("fake", "rich")
    assert not result.is_error
    assert "[image: image/png, 70 bytes]" in result.content
    assert "[resource: file:///notes.txt (text/plain)]\nhello notes" in result.content
    assert "[resource link: big.log <file:///big.log> (text/plain)]" in result.content
    assert result.content.endswith('{"count": 6}')  # structuredContent adds information here


@pytest.mark.slow
async def test_timed_out_call_is_cancelled_and_the_session_stays_usable(
    manager: McpManager,
) -> None:
    result = await manager.call_tool("fake", "slow", {"seconds": 60})
    assert result.is_error
    assert "did not answer within 5 s; the call was cancelled" in result.content
    echo = await manager.call_tool("fake", "echo", {"text": "still here"})
    assert (echo.is_error, echo.content) == (False, "still here")


async def test_calls_to_a_server_that_never_started_say_so(manager: McpManager) -> None:
    result = await manager.call_tool("crash", "anything")
    assert result.is_error
    assert "MCP server 'crash' is not running" in result.content
    assert "/mcp restart crash" in result.content


# ---------------------------------------------------------------------------------------------
# A server dying mid-session


@pytest.mark.slow
async def test_killed_server_gives_clear_errors_others_work_and_restart_restores_it(
    manager: McpManager, sink: CollectingSink, git_repo: Path, tmp_path: Path
) -> None:
    snapshot = [t.schema() for t in manager.tools()]
    registry = ToolRegistry(manager.tools())
    pid = next(s for s in manager.status() if s.name == "git").pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)

    args = json.dumps({"repo_path": str(git_repo)})
    result = await registry.execute("mcp__git__git_status", args, _ctx(tmp_path))
    assert result.is_error
    assert result.content == (
        "MCP server 'git' is not running (killed by signal SIGKILL); "
        "restart it with /mcp restart git"
    )
    assert next(s for s in manager.status() if s.name == "git").state is ServerState.EXITED
    assert any(e.error_type == "mcp_server_exited" for e in sink.of_type(ErrorEvent))

    other = await manager.call_tool("time", "get_current_time", {"timezone": "UTC"})
    assert not other.is_error

    status = await manager.restart("git")
    assert status.state is ServerState.RUNNING
    assert [t.schema() for t in manager.tools()] == snapshot  # same names and schemas
    assert manager.pending_changes() == []
    again = await registry.execute("mcp__git__git_status", args, _ctx(tmp_path))
    assert not again.is_error and "new.txt" in again.content


async def test_server_exiting_during_a_call_reports_its_exit_code(manager: McpManager) -> None:
    result = await manager.call_tool("fake", "die")
    assert result.is_error
    assert result.content == (
        "MCP server 'fake' is not running (exited with code 5); restart it with /mcp restart fake"
    )
    await manager.restart("fake")
    echo = await manager.call_tool("fake", "echo", {"text": "back"})
    assert echo.content == "back"


# ---------------------------------------------------------------------------------------------
# tools/list_changed and the snapshot rule


async def test_list_changed_is_recorded_but_the_session_snapshot_stays(tmp_path: Path) -> None:
    sink = CollectingSink()
    async with McpManager([fake_server("dyn", "--list-changed")], tmp_path, sink) as mgr:
        before = ToolRegistry(mgr.tools()).schema_bytes()
        # The fixture announces the change right after initialization; wait for it to land.
        for _ in range(6000):  # a generous bound: the server's note may be slow to come
            if mgr.pending_changes():
                break
            await asyncio.sleep(0.01)
        (change,) = mgr.pending_changes()
        assert change.server == "dyn" and "list_changed" in change.reason
        notices = [n for n in sink.of_type(NoticeEvent) if n.code == "mcp_tools_changed"]
        assert len(notices) == 1 and "applies to the next session" in notices[0].message
        assert ToolRegistry(mgr.tools()).schema_bytes() == before
        assert "mcp__dyn__added" not in {t.name for t in mgr.tools()}
        assert next(iter(mgr.status())).pending_change

        # A frontend starting a new session takes a fresh snapshot.
        fresh = await mgr.refresh_snapshot()
        assert "mcp__dyn__added" in {t.name for t in fresh}
        assert mgr.pending_changes() == []


async def test_a_change_announced_during_start_up_is_already_in_the_snapshot(
    tmp_path: Path,
) -> None:
    sink = CollectingSink()
    async with McpManager([fake_server("early", "--early-list-changed")], tmp_path, sink) as mgr:
        assert mgr.pending_changes() == []
        assert not any(n.code == "mcp_tools_changed" for n in sink.of_type(NoticeEvent))
        assert "mcp__early__echo" in {t.name for t in mgr.tools()}


# ---------------------------------------------------------------------------------------------
# Configuration files end to end


@pytest.mark.slow
async def test_mcp_json_and_toml_configured_servers_work(tmp_path: Path) -> None:
    mcp_json = tmp_path / ".mcp.json"
    mcp_json.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "time": {
                        "command": "${REASONIX_TEST_BIN}/mcp-server-time",
                        "args": ["--local-timezone", "UTC"],
                    }
                }
            }
        )
    )
    toml = tomllib.loads(
        f"""
        [[mcp.servers]]
        name = "fake"
        command = {json.dumps(sys.executable)}
        args = [{json.dumps(FAKE)}, "--noise"]
        call_timeout = 5
        """
    )
    environ = {**os.environ, "REASONIX_TEST_BIN": str(BIN)}
    configs = servers_from_mcp_json(mcp_json, environ=environ) + servers_from_toml(
        toml["mcp"]["servers"], environ=environ
    )
    sink = CollectingSink()
    async with McpManager(configs, tmp_path / "logs", sink) as mgr:
        assert [s.state for s in mgr.status()] == [ServerState.RUNNING, ServerState.RUNNING]
        time_result = await mgr.call_tool("time", "get_current_time", {"timezone": "UTC"})
        assert not time_result.is_error
        echo = await mgr.call_tool("fake", "echo", {"text": "ok"})
        assert echo.content == "ok"
        # A stray banner line on stdout is tolerated but reported.
        assert any(n.code == "mcp_server_stdout_noise" for n in sink.of_type(NoticeEvent))


# ---------------------------------------------------------------------------------------------
# Shutdown


async def test_aclose_stops_every_server_process(tmp_path: Path) -> None:
    mgr = McpManager([fake_server("a"), fake_server("b")], tmp_path)
    await mgr.start()
    pids = [s.pid for s in mgr.status()]
    assert all(pids)
    await mgr.aclose()
    assert [s.state for s in mgr.status()] == [ServerState.STOPPED, ServerState.STOPPED]
    for pid in pids:
        assert pid is not None
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    result = await mgr.call_tool("a", "echo", {"text": "x"})
    assert result.is_error and "not running" in result.content


async def test_aclose_during_start_up_stops_the_server_and_nothing_reaches_the_terminal(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    mgr = McpManager(
        [fake_server("crash", "--crash"), fake_server("slow", "--sleep", "30")], tmp_path
    )
    starting = asyncio.create_task(mgr.start())
    pid: int | None = None
    for _ in range(6000):  # a generous bound for starting two servers on a loaded machine
        crash, slow = mgr.status()
        pid = slow.pid
        if crash.state is ServerState.FAILED and pid is not None:
            break
        await asyncio.sleep(0.01)
    assert pid is not None
    await mgr.aclose()
    await starting
    assert mgr.status()[1].state is ServerState.STOPPED
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    out, err = capfd.readouterr()
    assert "fake server" not in out + err  # server stderr went to the log files only
    assert "cannot open the database" in (tmp_path / "crash.log").read_text()


# ---------------------------------------------------------------------------------------------
# Streamable HTTP


@pytest.fixture(scope="module")
def http_server() -> Iterator[str]:
    """The SDK's streamable HTTP server in a subprocess on loopback; requires X-Token: tok."""
    proc = subprocess.Popen(
        [sys.executable, str(FIXTURES / "http_server.py"), "tok"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("PORT "), line
        yield f"http://127.0.0.1:{int(line.split()[1])}/mcp"
    finally:
        proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


@pytest.mark.slow
async def test_streamable_http_server_with_headers(http_server: str, tmp_path: Path) -> None:
    configs = [
        McpServerConfig("web", url=http_server, headers={"X-Token": "tok"}),
        McpServerConfig("web-nokey", url=http_server),
    ]
    sink = CollectingSink()
    async with McpManager(configs, tmp_path, sink) as mgr:
        web, nokey = mgr.status()
        assert web.state is ServerState.RUNNING, web.line()
        assert [t.name for t in mgr.tools()] == ["mcp__web__shout"]
        result = await mgr.call_tool("web", "shout", {"text": "hi"})
        assert (result.is_error, result.content) == (False, "HI")
        assert nokey.state is ServerState.FAILED
        assert "check the URL and the headers" in (nokey.error or "")


async def test_a_tool_listed_twice_does_not_break_the_registry(tmp_path: Path) -> None:
    async with McpManager([fake_server("dup", "--duplicate-tool")], tmp_path) as mgr:
        names = [t.name for t in mgr.tools()]
        assert names.count("mcp__dup__echo") == 1
        registry = ToolRegistry(mgr.tools())  # raised "Duplicate tool name" before
        result = await registry.execute(
            "mcp__dup__echo", json.dumps({"text": "once"}), ToolContext(workspace=tmp_path)
        )
        assert (result.is_error, result.content) == (False, "once")


@pytest.mark.slow
async def test_refresh_snapshot_is_bounded_by_the_call_timeout(tmp_path: Path) -> None:
    """A server that announced a change and then never answers tools/list must not hang the
    frontend starting a new session (``/clear``); the old tools stay."""
    async with McpManager(
        # A bound the echo below meets on a loaded machine, and the hung relist runs into.
        [fake_server("hang", "--hang-relist", call_timeout=3.0)],
        tmp_path,
    ) as mgr:
        before = [t.name for t in mgr.tools()]
        for _ in range(6000):  # a generous bound: the server's note may be slow to come
            if mgr.pending_changes():
                break
            await asyncio.sleep(0.01)
        assert mgr.pending_changes()
        fresh = await asyncio.wait_for(mgr.refresh_snapshot(), 15)
        assert [t.name for t in fresh] == before
        assert mgr.pending_changes()  # still to be applied
        assert "tools/list failed" in (tmp_path / "hang.log").read_text()
        echo = await mgr.call_tool("hang", "echo", {"text": "alive"})
        assert echo.content == "alive"


async def test_server_stderr_escape_sequences_never_reach_messages(tmp_path: Path) -> None:
    sink = CollectingSink()
    async with McpManager([fake_server("loud", "--ansi-stderr", "--crash")], tmp_path, sink) as mgr:
        (status,) = mgr.status()
    assert status.state is ServerState.FAILED
    (event,) = sink.of_type(ErrorEvent)
    for text in (status.error or "", status.line(), event.message):
        assert "ERROR colored" in text and "cannot open the database" in text
        assert "\x1b" not in text and "\x07" not in text
    assert "\x1b[31m" in (tmp_path / "loud.log").read_text()  # the log keeps the raw bytes


async def test_aclose_while_start_is_importing_the_sdk_starts_nothing(tmp_path: Path) -> None:
    mgr = McpManager([fake_server("a"), fake_server("b")], tmp_path)
    starting = asyncio.create_task(mgr.start())
    await asyncio.sleep(0)  # start() is now waiting for the SDK import in a thread
    await mgr.aclose()
    await starting
    assert all(s.state is ServerState.STOPPED and s.pid is None for s in mgr.status())
    assert all(s.log_path is None or not s.log_path.exists() for s in mgr.status())
