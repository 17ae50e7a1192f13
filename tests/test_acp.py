"""``reasonix acp`` as an editor sees it: the real ``python -m reasonix acp`` process, driven by
the ACP SDK's own client side (``acp.spawn_agent_process``), against fake model servers on
loopback."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
from acp import RequestError, spawn_agent_process
from acp import schema as s

from reasonix.safety.permissions import Mode
from reasonix.testing import Fault, Reply
from tests.support.acp import EditorClient, acp_agent, text
from tests.support.project import KEY_ENV, Project, project

__all__ = ["project"]


@pytest.mark.slow
async def test_dual_model_turn_streams_plan_tools_diff_permissions_and_usage(
    project: Project,
) -> None:
    (project.root / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    project.pl.push(
        Reply.call("read_file", {"path": "calc.py"}, reasoning="Look at the file first."),
        Reply.call(
            "submit_plan",
            {
                "objective": "Fix add()",
                "steps": [
                    {"title": "Fix the operator in calc.py", "files": ["calc.py"]},
                    {"title": "Report the change"},
                ],
            },
        ),
    )
    project.ex.push(
        Reply.call(
            "edit_file",
            {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"},
            reasoning="Apply the plan's first step.",
        ),
        Reply.call("bash", {"command": "rm -r build"}),
        Reply.call("complete_step", {"step": "1", "evidence": "edited calc.py"}),
        Reply.call("read_file", {"path": "calc.py"}),
        Reply.call("complete_step", {"step": "2", "evidence": "read the fixed calc.py back"}),
        Reply.text("Fixed add() in calc.py; I did not remove build/ (refused)."),
    )
    client = EditorClient(answers=["allow_once", "deny"])
    async with acp_agent(project, client) as conn:
        new = await conn.new_session(cwd=str(project.root), mcp_servers=[])
        assert new.modes is not None and new.modes.current_mode_id == "ask"
        assert [m.id for m in new.modes.available_modes] == [m.value for m in Mode]
        reply = await asyncio.wait_for(
            conn.prompt(session_id=new.session_id, prompt=text("/plan fix add() in calc.py")), 60
        )
    assert reply.stop_reason == "end_turn"
    assert (project.root / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"

    kinds = client.kinds()
    print("\nupdate kinds in one turn:", dict(sorted(kinds.items())))
    for kind in (
        "available_commands_update",
        "agent_thought_chunk",
        "agent_message_chunk",
        "tool_call",
        "tool_call_update",
        "plan",
        "usage_update",
    ):
        assert kinds[kind] > 0, kind

    # The planner's work is visible as such.
    planner_calls = [u for u in client.of(s.ToolCallStart) if u.title.startswith("planner:")]
    assert planner_calls and planner_calls[0].kind == "read"
    assert any(
        u.field_meta["reasonix"]["role"] == "planner" for u in client.of(s.AgentThoughtChunk)
    )

    # The edit arrives with its diff and location before it runs.
    (edit,) = [u for u in client.of(s.ToolCallStart) if u.kind == "edit"]
    (diff,) = edit.content
    assert isinstance(diff, s.FileEditToolCallContent)
    assert diff.path == str(project.root / "calc.py")
    assert diff.old_text == "def add(a, b):\n    return a - b\n"
    assert diff.new_text == "def add(a, b):\n    return a + b\n"
    assert edit.locations[0].path == str(project.root / "calc.py")

    # Permissions: the edit asked and was allowed, the command asked and was rejected.
    asked = [c.tool_call_id for c in client.permission_calls]
    (bash,) = [u for u in client.of(s.ToolCallStart) if u.kind == "execute"]
    assert asked == [edit.tool_call_id, bash.tool_call_id]
    statuses = {u.tool_call_id: u.status for u in client.of(s.ToolCallProgress)}
    assert statuses[edit.tool_call_id] == "completed"
    assert statuses[bash.tool_call_id] == "failed"

    # The plan as entries, updated as steps complete.
    plans = client.of(s.AgentPlanUpdate)
    assert [e.content for e in plans[0].entries] == [
        "Fix the operator in calc.py",
        "Report the change",
    ]
    assert plans[-1].entries[0].status == "completed"

    # Usage with per-role figures under _meta.
    usage = client.of(s.UsageUpdate)[-1]
    roles = usage.field_meta["reasonix"]["roles"]
    assert set(roles) >= {"executor", "planner"}
    for role in ("executor", "planner"):
        assert roles[role]["requests"] > 0
        assert roles[role]["prompt_tokens"] == (
            roles[role]["cache_hit_tokens"] + roles[role]["cache_miss_tokens"]
        )
    assert usage.size == 1_048_576 or usage.size > 0
    assert usage.used > 0
    assert usage.cost is not None and usage.cost.amount == pytest.approx(
        sum(r["cost"] for r in roles.values()), abs=1e-7
    )
    assert "Fixed add()" in client.text()


@pytest.mark.slow
async def test_cancel_mid_stream_then_a_second_prompt(project: Project) -> None:
    project.ex.push(
        Reply.failing(Fault(stall_seconds=30, stall_after_bytes=200)),
        Reply.text("Second prompt answered."),
    )
    client = EditorClient()
    async with acp_agent(project, client) as conn:
        new = await conn.new_session(cwd=str(project.root), mcp_servers=[])
        running = asyncio.create_task(
            conn.prompt(session_id=new.session_id, prompt=text("write a long essay"))
        )
        # until the stalled answer has begun (the server picked its reply and is sending it)
        for _ in range(2400):
            if project.ex.requests and project.ex.requests[0].reply is not None:
                break
            await asyncio.sleep(0.05)
        await conn.cancel(session_id=new.session_id)
        first = await asyncio.wait_for(running, 30)
        assert first.stop_reason == "cancelled"
        second = await asyncio.wait_for(
            conn.prompt(session_id=new.session_id, prompt=text("and now?")), 30
        )
    assert second.stop_reason == "end_turn"
    assert "Second prompt answered." in client.text()
    # The second request is valid: the cancelled turn left no dangling message.
    last = project.ex.requests[-1].messages
    assert last[-1] == {"role": "user", "content": "and now?"}
    assert all(m["role"] != "user" for m in last[-2:-1])


@pytest.mark.slow
async def test_load_a_stored_session_and_continue_with_a_warm_cache(project: Project) -> None:
    project.ex.push(
        Reply.text("First answer, long enough to matter for the cache. " * 20),
        Reply.text("Continued after loading."),
    )
    client = EditorClient()
    async with acp_agent(project, client) as conn:
        new = await conn.new_session(cwd=str(project.root), mcp_servers=[])
        await conn.prompt(session_id=new.session_id, prompt=text("first question " * 50))
        sid = new.session_id

    listed_client = EditorClient()
    async with acp_agent(project, listed_client) as conn:
        listed = await conn.list_sessions(cwd=str(project.root))
        assert sid in [x.session_id for x in listed.sessions]
        await conn.load_session(cwd=str(project.root), session_id=sid, mcp_servers=[])
        replayed = listed_client.of(s.UserMessageChunk)
        assert replayed and "first question" in replayed[0].content.text
        assert "First answer" in listed_client.text()
        reply = await conn.prompt(session_id=sid, prompt=text("second question"))
    assert reply.stop_reason == "end_turn"
    first, second = project.ex.requests[-2:]
    sent_before = [json.dumps(m) for m in first.body["messages"]]
    assert [json.dumps(m) for m in second.body["messages"]][: len(sent_before)] == sent_before
    usage = listed_client.of(s.UsageUpdate)[-1].field_meta["reasonix"]["roles"]["executor"]
    assert usage["cache_hit_tokens"] > 0, "the loaded session must reuse the cached prefix"


@pytest.mark.slow
async def test_bad_configuration_and_missing_key_are_json_rpc_errors(project: Project) -> None:
    toml = project.root / "reasonix.toml"
    toml.write_text(toml.read_text() + '\n[permissions]\nmode = "sometimes"\n')
    client = EditorClient()
    async with acp_agent(project, client) as conn:
        with pytest.raises(RequestError) as bad:
            await conn.new_session(cwd=str(project.root), mcp_servers=[])
        assert "permissions.mode" in str(bad.value)
        with pytest.raises(RequestError) as missing_dir:
            await conn.new_session(cwd=str(project.root / "nope"), mcp_servers=[])
        assert "absolute path to a folder" in str(missing_dir.value)
    project.write_toml()
    env = project.env()
    del env["REASONIX_FAKE_KEY"]
    async with acp_agent(project, client, env=env) as conn:
        with pytest.raises(RequestError) as no_key:
            await conn.new_session(cwd=str(project.root), mcp_servers=[])
        assert "REASONIX_FAKE_KEY" in str(no_key.value)
    assert project.ex.requests == []


@pytest.mark.slow
async def test_modes_and_commands(project: Project) -> None:
    project.ex.push(Reply.text("ok"))
    client = EditorClient()
    async with acp_agent(project, client) as conn:
        new = await conn.new_session(cwd=str(project.root), mcp_servers=[])
        await conn.set_session_mode(session_id=new.session_id, mode_id="plan")
        with pytest.raises(RequestError) as bad:
            await conn.set_session_mode(session_id=new.session_id, mode_id="wild")
        assert "auto-edit" in str(bad.value)
        await conn.prompt(session_id=new.session_id, prompt=text("hello"))
        cost = await conn.prompt(session_id=new.session_id, prompt=text("/cost"))
        assert cost.stop_reason == "end_turn"
    modes = [u.current_mode_id for u in client.of(s.CurrentModeUpdate)]
    assert modes == ["plan"]
    (commands,) = client.of(s.AvailableCommandsUpdate)
    assert {"plan", "approve", "cost", "compact", "rewind", "mode"} <= {
        c.name for c in commands.available_commands
    }
    assert "executor" in client.text()
    # /cost answered locally: only "hello" reached the model.
    assert len(project.ex.requests) == 1


@pytest.mark.slow
async def test_stdout_carries_only_the_protocol(project: Project, tmp_path: Path) -> None:
    """Something in the agent process that prints to stdout after start-up (here a library
    thread, planted through ``sitecustomize``) must not reach the protocol stream: the SDK
    would fail to parse the line. It lands on stderr instead."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import sys, threading, time\n"
        "def stray():\n"
        "    while 'reasonix.acp.server' not in sys.modules:\n"
        "        time.sleep(0.01)\n"
        "    time.sleep(0.5)\n"
        "    print('stray line from a library', flush=True)\n"
        "threading.Thread(target=stray, daemon=True).start()\n"
    )
    project.ex.push(Reply.text("done"))
    client = EditorClient()
    async with acp_agent(project, client, env=project.env(PYTHONPATH=str(site))) as conn:
        new = await conn.new_session(cwd=str(project.root), mcp_servers=[])
        log = project.root.parent / "acp-stderr.log"
        for _ in range(2400):  # the stray line is printed before the prompt is sent
            if "stray line from a library" in log.read_text():
                break
            await asyncio.sleep(0.05)
        reply = await conn.prompt(session_id=new.session_id, prompt=text("hello"))
    assert reply.stop_reason == "end_turn"
    assert "done" in client.text()
    stderr = (project.root.parent / "acp-stderr.log").read_text()
    assert "stray line from a library" in stderr


def test_registry_entry_launches_this_command() -> None:
    """``acp/agent.json`` (the ACP registry entry) names our package, version and command."""
    from reasonix._version import __version__

    entry = json.loads((Path(__file__).parent.parent / "acp" / "agent.json").read_text())
    assert entry["id"] == "reasonix"
    assert entry["version"] == __version__
    assert entry["distribution"]["uvx"] == {"package": "reasonix", "args": ["acp"]}


@pytest.mark.slow
async def test_authentication_method_is_the_key_variable(project: Project) -> None:
    """The method names the variable the configured provider reads, not DeepSeek's default."""
    client = EditorClient()
    async with acp_agent(project, client, env=project.env(DEEPSEEK_API_KEY="sk-x")) as conn:
        init = await conn.initialize(protocol_version=1)
        (method,) = init.auth_methods
        assert method.id == "fake-executor-api-key"
        assert [v.name for v in method.vars] == [KEY_ENV]
        await conn.authenticate(method_id="fake-executor-api-key")
        with pytest.raises(RequestError, match="unknown authentication method"):
            await conn.authenticate(method_id="deepseek-api-key")
    env = {k: v for k, v in project.env().items() if k != KEY_ENV}
    async with acp_agent(project, client, env=env) as conn:
        with pytest.raises(RequestError, match=f"{KEY_ENV} is not set"):
            await conn.authenticate(method_id="fake-executor-api-key")


def _environ_or_nothing(path: Path) -> bytes:
    """The environment block of a process, or b"" when it is not ours to read (a non-dumpable
    process, for anyone without CAP_SYS_PTRACE)."""
    try:
        return path.read_bytes()
    except PermissionError:
        return b""


@pytest.mark.slow
async def test_no_key_in_the_agent_process_environment(project: Project) -> None:
    """After start-up the key is held in memory: /proc/<pid>/environ of ``reasonix acp`` and
    every child it starts no longer show it, yet sessions still authenticate with it."""
    project.write_toml('\n[permissions]\nmode = "yolo"\n')
    project.ex.push(
        Reply.call("bash", {"command": "cat /proc/$PPID/environ | tr '\\0' '\\n'; env"}),
        Reply.text("looked"),
    )
    client = EditorClient()
    env = project.env(DEEPSEEK_API_KEY="sk-deepseek-secret")
    async with spawn_agent_process(
        client,
        sys.executable,
        "-m",
        "reasonix",
        "acp",
        env=env,
        cwd=project.root,
        transport_kwargs={"shutdown_timeout": 30.0},
    ) as (conn, process):
        proc_environ = Path(f"/proc/{process.pid}/environ")
        await conn.initialize(protocol_version=1)
        at_start = await asyncio.to_thread(_environ_or_nothing, proc_environ)
        new = await conn.new_session(cwd=str(project.root), mcp_servers=[])
        reply = await conn.prompt(session_id=new.session_id, prompt=text("look around"))
        after_turn = await asyncio.to_thread(_environ_or_nothing, proc_environ)
    assert reply.stop_reason == "end_turn"
    for environ in (at_start, after_turn):
        assert b"sk-test" not in environ and b"sk-deepseek-secret" not in environ
        if environ:  # unreadable without CAP_SYS_PTRACE: the agent is non-dumpable
            assert b"REASONIX_DATA_DIR" in environ, "the probe reads the real environment block"
    (result,) = [u for u in client.of(s.ToolCallProgress) if u.status == "completed"]
    output = result.content[0].content.text
    assert "sk-test" not in output and "sk-deepseek-secret" not in output
    assert project.ex.requests[0].headers.get("authorization") == "Bearer sk-test"
