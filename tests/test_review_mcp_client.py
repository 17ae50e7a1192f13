"""Defects found reviewing the MCP client layer, each pinned by a test: schema normalisation that
altered data or produced schemas the validator cannot read, a server listing a tool twice, an
unbounded re-list, SDK diagnostics on the terminal, escape sequences from server stderr, log
files shared by two servers, and shutdown paths (event loop closing, aclose during start-up)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from reasonix.events import CollectingSink, ErrorEvent
from reasonix.mcp import McpManager, McpServerConfig, ServerState, normalize_schema
from reasonix.tools.registry import ToolContext, ToolRegistry

FAKE = str(Path(__file__).parent / "fixtures" / "mcp" / "fake_server.py")
ROOT = Path(__file__).resolve().parent.parent


def _fake(name: str, *args: str, **kw: float) -> McpServerConfig:
    return McpServerConfig(name, command=sys.executable, args=(FAKE, *args), **kw)  # type: ignore[arg-type]


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


# ---------------------------------------------------------------------------------------------
# Schemas


def test_schema_data_values_are_kept_verbatim() -> None:
    """``default``/``examples``/``const``/``enum`` hold data, not schemas: keys such as ``title``
    or ``$id`` in them are the tool's values and must reach the model unchanged."""
    out = normalize_schema(
        {
            "type": "object",
            "properties": {
                "page": {
                    "type": "object",
                    "default": {"title": "Untitled", "$id": "p1"},
                    "examples": [{"title": "Notes"}],
                },
                "kind": {"const": {"title": "x"}},
                "pick": {"enum": [{"title": "a"}, {"title": "b"}]},
            },
        }
    )
    props = out["properties"]
    assert props["page"]["default"] == {"$id": "p1", "title": "Untitled"}
    assert props["page"]["examples"] == [{"title": "Notes"}]
    assert props["kind"]["const"] == {"title": "x"}
    assert props["pick"]["enum"] == [{"title": "a"}, {"title": "b"}]


def test_properties_beside_a_ref_keep_their_names() -> None:
    """Draft 2019+ allows keywords beside ``$ref``; a property named ``title`` there is a
    property, not an annotation."""
    out = normalize_schema(
        {
            "type": "object",
            "$defs": {"Base": {"type": "object", "required": ["title"]}},
            "properties": {
                "doc": {
                    "$ref": "#/$defs/Base",
                    "title": "Doc",
                    "properties": {"title": {"type": "string", "title": "Title"}},
                }
            },
        }
    )
    assert out["properties"]["doc"] == {
        "properties": {"title": {"type": "string"}},
        "required": ["title"],
        "type": "object",
    }


def test_boolean_subschemas_become_objects_the_validator_reads() -> None:
    """``true``/``false`` are valid JSON Schemas; left as booleans they crash argument
    validation (the agent's turn) instead of validating."""
    tool_schema = {
        "type": "object",
        "properties": {"anything": True, "never": False, "either": {"anyOf": [True, False]}},
    }
    out = normalize_schema(tool_schema)
    assert out["properties"] == {
        "anything": {},
        "either": {"anyOf": [{}, {"not": {}}]},
        "never": {"not": {}},
    }
    from reasonix.tools.registry import validate_arguments

    assert validate_arguments(out, {"anything": [1, 2], "either": "x"}) == []


# ---------------------------------------------------------------------------------------------
# Servers (the raw fixture server starts in milliseconds)


async def test_a_tool_listed_twice_does_not_break_the_registry(tmp_path: Path) -> None:
    async with McpManager([_fake("dup", "--duplicate-tool")], tmp_path) as mgr:
        names = [t.name for t in mgr.tools()]
        assert names.count("mcp__dup__echo") == 1
        registry = ToolRegistry(mgr.tools())  # raised "Duplicate tool name" before
        result = await registry.execute(
            "mcp__dup__echo", json.dumps({"text": "once"}), ToolContext(workspace=tmp_path)
        )
        assert (result.is_error, result.content) == (False, "once")


async def test_refresh_snapshot_is_bounded_by_the_call_timeout(tmp_path: Path) -> None:
    """A server that announced a change and then never answers tools/list must not hang the
    frontend starting a new session (``/clear``); the old tools stay."""
    async with McpManager([_fake("hang", "--hang-relist", call_timeout=0.5)], tmp_path) as mgr:
        before = [t.name for t in mgr.tools()]
        for _ in range(500):
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
    async with McpManager([_fake("loud", "--ansi-stderr", "--crash")], tmp_path, sink) as mgr:
        (status,) = mgr.status()
    assert status.state is ServerState.FAILED
    (event,) = sink.of_type(ErrorEvent)
    for text in (status.error or "", status.line(), event.message):
        assert "ERROR colored" in text and "cannot open the database" in text
        assert "\x1b" not in text and "\x07" not in text
    assert "\x1b[31m" in (tmp_path / "loud.log").read_text()  # the log keeps the raw bytes


def test_servers_whose_names_sanitise_alike_get_separate_logs(tmp_path: Path) -> None:
    configs = [
        McpServerConfig("my server", command="x"),
        McpServerConfig("my_server", command="x"),
        McpServerConfig("my/server", command="x"),
    ]
    paths = [s.log_path for s in McpManager(configs, tmp_path).status()]
    assert len(set(paths)) == 3
    assert paths[1] == tmp_path / "my_server.log"  # a plain name keeps its plain file
    assert all(p is not None and p.parent == tmp_path for p in paths)


async def test_aclose_while_start_is_importing_the_sdk_starts_nothing(tmp_path: Path) -> None:
    mgr = McpManager([_fake("a"), _fake("b")], tmp_path)
    starting = asyncio.create_task(mgr.start())
    await asyncio.sleep(0)  # start() is now waiting for the SDK import in a thread
    await mgr.aclose()
    await starting
    assert all(s.state is ServerState.STOPPED and s.pid is None for s in mgr.status())
    assert all(s.log_path is None or not s.log_path.exists() for s in mgr.status())


def test_a_closing_event_loop_stops_servers_without_reporting_a_crash(tmp_path: Path) -> None:
    """``asyncio.run`` ending with the manager still open cancels its tasks: the servers are
    shut down, and that is a stop, not "stopped unexpectedly"."""
    sink = CollectingSink()
    pids: list[int] = []
    managers: list[McpManager] = []

    async def main() -> None:
        mgr = McpManager([_fake("a")], tmp_path, sink)
        managers.append(mgr)
        await mgr.start()
        pids.extend(s.pid for s in mgr.status() if s.pid is not None)

    asyncio.run(main())
    assert len(pids) == 1 and _gone(pids[0])
    assert sink.of_type(ErrorEvent) == []
    assert [s.state for s in managers[0].status()] == [ServerState.STOPPED]


def test_sdk_diagnostics_go_to_the_server_log_not_the_terminal(tmp_path: Path) -> None:
    """The SDK logs a warning with a traceback when a server sends a notification the schema
    rejects (``"level": "warn"`` is common); without a handler Python prints it on stderr, in
    the middle of the terminal UI."""
    script = textwrap.dedent(
        f"""
        import asyncio, sys
        from pathlib import Path
        from reasonix.mcp import McpManager, McpServerConfig

        async def main():
            cfg = McpServerConfig("noisy", command=sys.executable, args=({FAKE!r}, "--bad-log"))
            log = Path({str(tmp_path)!r}) / "noisy.log"
            async with McpManager([cfg], {str(tmp_path)!r}) as mgr:
                for _ in range(500):
                    if "Failed to validate notification" in log.read_text():
                        break
                    r = await mgr.call_tool("noisy", "echo", {{"text": "x"}})
                    assert r.content == "x"
                    await asyncio.sleep(0.01)

        asyncio.run(main())
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""
    log = (tmp_path / "noisy.log").read_text()
    assert "Failed to validate notification: notifications/message" in log
    traceback = [ln for ln in log.splitlines() if "Traceback" in ln or "File " in ln]
    assert traceback and all(ln.startswith("[reasonix]") for ln in traceback)  # not "stderr"
