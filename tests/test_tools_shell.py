from __future__ import annotations

import json
import os
import shutil
import socket
import time
from pathlib import Path
from typing import Any

import pytest

from reasonix.tools.builtin import default_tools
from reasonix.tools.builtin.shell import ShellOptions, ShellTool, bwrap_argv, is_secret_env
from reasonix.tools.registry import ToolContext, ToolRegistry, ToolResult

HAS_BWRAP = shutil.which("bwrap") is not None


async def run(
    ws: Path, command: str, options: ShellOptions | None = None, **extra: Any
) -> ToolResult:
    reg = ToolRegistry(default_tools(ws, shell_options=options))
    args = json.dumps({"command": command, **extra})
    return await reg.execute("bash", args, ToolContext(workspace=ws))


def real(path: Path) -> str:
    return str(path.resolve())


def process_gone(pid: int) -> bool:
    """Dead or a zombie waiting for a reaper (a container's PID 1 may never reap it)."""
    status = Path(f"/proc/{pid}/status")
    # Wait (not time) for the kernel to finish delivering SIGKILL.
    for _ in range(6000):  # up to a minute on a loaded machine; a dead process ends it at once
        try:
            state = next(ln for ln in status.read_text().splitlines() if ln.startswith("State:"))
        except (FileNotFoundError, ProcessLookupError):
            return True
        if "Z" in state.split()[1] or "X" in state.split()[1]:
            return True
        time.sleep(0.01)
    return False


async def test_output_exit_code_and_effect(tmp_path: Path) -> None:
    result = await run(tmp_path, "echo out; echo err >&2; pwd; exit 7")
    assert not result.is_error
    lines = result.content.splitlines()
    assert lines[:3] == ["out", "err", real(tmp_path)]
    assert lines[-1] == "[exit code 7]"
    effect = result.effects[0]
    assert effect.kind == "command" and effect.target.startswith("echo out") and not effect.ok
    ok = await run(tmp_path, "true")
    assert ok.content == "(no output)" and ok.effects[0].ok  # success adds no line
    same = await run(tmp_path, "true")
    assert same.effects[0].digest == ok.effects[0].digest


async def test_stdin_is_closed(tmp_path: Path) -> None:
    result = await run(tmp_path, "cat; echo done")
    assert result.content.startswith("done")


@pytest.mark.slow
async def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    command = "bash -c 'sleep 300 & echo $! > grandchild.pid; wait' ; echo never"
    # 3 s: time for the shell to start and write the pid file on a loaded machine
    result = await run(tmp_path, command, ShellOptions(kill_grace=5), timeout=3)
    assert result.is_error and "timed out after 3 s" in result.content
    assert "never" not in result.content
    assert not result.effects[0].ok
    pid = int((tmp_path / "grandchild.pid").read_text())
    assert process_gone(pid)


async def test_background_processes_do_not_outlive_the_command(tmp_path: Path) -> None:
    result = await run(tmp_path, "sleep 300 & echo $! > bg.pid; echo started")
    assert result.content == "started" and result.effects[0].ok
    assert process_gone(int((tmp_path / "bg.pid").read_text()))


async def test_output_is_capped_keeping_head_and_tail(tmp_path: Path) -> None:
    command = "echo FIRST; yes middle | head -n 100000; echo LAST"
    result = await run(tmp_path, command, ShellOptions(output_limit=1000))
    assert result.content.startswith("FIRST")
    assert result.content.endswith("LAST")
    assert "output capped" in result.content
    assert len(result.content) < 1200


async def test_secrets_are_not_passed_to_commands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    planted = {
        "DEEPSEEK_API_KEY": "sk-1",
        "OPENAI_API_KEY": "sk-2",
        "GITHUB_TOKEN": "ghp",
        "CLIENT_SECRET": "cs",
        "AWS_SECRET_ACCESS_KEY": "aws",
        "DB_PASSWORD": "pw",
        "MY_PROVIDER_CRED": "configured",
        "KEEP_ME": "visible",
        "NOT_LISTED": "hidden",
    }
    for name, value in planted.items():
        monkeypatch.setenv(name, value)
    # An allowlist, plus what the user includes; an included secret-looking name still stays out.
    options = ShellOptions(secret_env=["my_provider_cred"], pass_env=["KEEP_ME", "*_TOKEN"])
    result = await run(tmp_path, "env", options)
    env_names = {line.split("=", 1)[0] for line in result.content.splitlines() if "=" in line}
    assert "KEEP_ME=visible" in result.content and "PATH" in env_names
    for name in planted:
        if name != "KEEP_ME":
            assert name not in env_names
    assert "PAGER=cat" in result.content
    assert is_secret_env("anthropic_api_key") and not is_secret_env("PATH")


async def test_each_call_starts_in_the_workspace(tmp_path: Path) -> None:
    await run(tmp_path, "mkdir d && cd d && touch inside")
    result = await run(tmp_path, "pwd; ls d")
    assert result.content.splitlines()[:2] == [real(tmp_path), "inside"]


def test_bwrap_command_line_limits_writes_and_network(tmp_path: Path) -> None:
    argv = bwrap_argv([tmp_path], tmp_path, ["bash", "-c", "true"])
    assert argv[:2] == ["bwrap", "--unshare-all"] and "--share-net" not in argv
    options = argv[: argv.index("--")]
    binds = [options[k + 1] for k, o in enumerate(options) if o in ("--bind", "--ro-bind")]
    assert "/" not in binds  # the root is never bound whole
    assert ["--bind", str(tmp_path), str(tmp_path)] == argv[argv.index("--bind") :][:3]
    assert "--die-with-parent" in argv and argv[-3:] == ["bash", "-c", "true"]


async def test_bwrap_requested_but_missing_refuses_to_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A PATH without bubblewrap stands for a machine that lacks it, so the refusal path runs
    # here too whether or not this machine has bwrap installed.
    empty = tmp_path / "no-bwrap-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    result = await run(tmp_path, "touch ran", ShellOptions(isolation="bwrap"))
    assert result.is_error and "bubblewrap" in result.content
    assert not (tmp_path / "ran").exists()


@pytest.mark.skipif(not HAS_BWRAP, reason="bubblewrap (bwrap) is not installed")
async def test_bwrap_confines_writes_and_network(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    outside = tmp_path / "outside.txt"
    options = ShellOptions(isolation="bwrap")
    inside = await run(ws, "echo ok > inside.txt && cat inside.txt", options)
    assert inside.content.startswith("ok")
    # Inside the sandbox /tmp is a private tmpfs, so the write may "succeed" there; what matters
    # is that nothing reaches the real file system outside the workspace.
    await run(ws, f"echo bad > {outside}", options)
    assert not outside.exists()
    home_probe = Path.home() / f".reasonix-bwrap-probe-{os.getpid()}"
    await run(ws, f"echo bad > {home_probe}", options)
    assert not home_probe.exists()
    # A listener on the host's loopback is unreachable from the sandbox's own network namespace.
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        probe = f"(echo > /dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo connected || echo refused"
        plain = await run(ws, probe)
        boxed = await run(ws, probe, options)
    assert plain.content.startswith("connected")
    assert boxed.content.startswith("refused")


def test_tool_flags(tmp_path: Path) -> None:
    tool = ShellTool(tmp_path).tool()
    assert tool.name == "bash" and tool.destructive and tool.category == "bash"
    assert tool.timeout is not None and tool.timeout > ShellOptions().max_timeout
    assert os.path.isabs(str(ShellTool(tmp_path).workspace))


@pytest.mark.skipif(shutil.which("setsid") is None, reason="setsid (util-linux) is not installed")
@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs Linux /proc")
async def test_a_process_that_left_the_group_with_setsid_is_stopped_too(tmp_path: Path) -> None:
    reg = ToolRegistry(default_tools(tmp_path))
    command = (
        "setsid -f sh -c 'echo $$ > daemon.pid; exec sleep 300' >/dev/null 2>&1; "
        "while [ ! -s daemon.pid ]; do sleep 0.01; done; echo started"
    )
    result = await reg.execute(
        "bash", json.dumps({"command": command}), ToolContext(workspace=tmp_path)
    )
    assert result.content.startswith("started"), result.content
    pid = int((tmp_path / "daemon.pid").read_text())
    assert process_gone(pid), f"process {pid} started with setsid outlived the command"
