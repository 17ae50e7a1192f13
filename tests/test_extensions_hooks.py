"""Hooks in Claude Code's protocol, with scripts written the way its documentation shows them
(Python reading the event from stdin, exit 2 or JSON on stdout), run unchanged: each event, a
blocking exit 2 whose reason the model sees in the next request, JSON decisions (deny, allow,
ask, block, additionalContext at the tail of the next user message), a timeout and a crashing
hook that never break the turn; where hooks are read from and that a project's hooks need trust.
Through the real ``reasonix run`` against the fake model server, and the session façade for the
events a headless run does not reach (compaction, approvals)."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from reasonix.app.environment import without_environment
from reasonix.app.session import AgentSession
from reasonix.config import load_config
from reasonix.config.hooks import HookShapeError, parse_hook_table
from reasonix.errors import ConfigError
from reasonix.extensions.hooks import matches
from reasonix.safety.permissions import ApprovalAnswer, ApprovalRequest
from reasonix.store import SessionStore
from reasonix.testing import FakeDeepSeekServer, Reply
from reasonix.testing.project import fake_project_toml
from tests.support.project import KEY_ENV, Project, json_lines, project

__all__ = ["project"]

PY = sys.executable

# The validator from Claude Code's hooks documentation, in spirit: read the event, refuse a
# dangerous command with exit 2 and a reason on stderr.
BASH_VALIDATOR = """\
import json
import sys

input_data = json.load(sys.stdin)
tool_name = input_data.get("tool_name", "")
command = input_data.get("tool_input", {}).get("command", "")
with open("hook-log.jsonl", "a") as log:
    log.write(json.dumps(input_data) + "\\n")
if tool_name != "Bash" or not command:
    sys.exit(0)
if "rm -rf" in command:
    print("Use trash-put instead of rm -rf; nothing was deleted.", file=sys.stderr)
    sys.exit(2)
sys.exit(0)
"""

LOGGER = """\
import json
import sys

data = json.load(sys.stdin)
with open("hook-log.jsonl", "a") as log:
    log.write(json.dumps(data) + "\\n")
"""


def _script(project: Project, name: str, body: str) -> str:
    path = project.root / name
    path.write_text(textwrap.dedent(body))
    return f"{PY} {path}"


def _user_hooks(project: Project, toml: str) -> None:
    """Add to the user's config.toml (which already trusts the project folder)."""
    user = project.config_dir / "config.toml"
    user.write_text(user.read_text() + toml)


def _hook(
    event: str, command: str, matcher: str | None = None, timeout: float | None = None
) -> str:
    """One ``[[hooks.EVENT]]`` group in TOML."""
    entry = f'{{ type = "command", command = {json.dumps(command)}'
    entry += f", timeout = {timeout} }}" if timeout is not None else " }"
    head = f"[[hooks.{event}]]\n" + (f"matcher = {json.dumps(matcher)}\n" if matcher else "")
    return head + f"hooks = [{entry}]\n"


def _log(project: Project) -> list[dict[str, Any]]:
    path = project.root / "hook-log.jsonl"
    return json_lines(path.read_text()) if path.exists() else []


def _tool_results(project: Project, request: int) -> list[str]:
    return [m["content"] for m in project.ex.requests[request].messages if m["role"] == "tool"]


# -- configuration ----------------------------------------------------------------------------


def test_matchers_accept_our_names_claude_names_and_regexes() -> None:
    assert matches("Bash", "bash", "Bash")
    assert matches("bash", "bash", "Bash")
    assert matches("Edit|Write", "write_file", "Write")
    assert not matches("Edit|Write", "read_file", "Read")
    assert matches("", "anything") and matches("*", "anything")
    assert matches("mcp__time__.*", "mcp__time__get_current_time")
    assert matches("Notebook(", "Notebook(")  # an invalid regex compares exactly


def test_hook_tables_are_checked_with_clear_errors(tmp_path: Path) -> None:
    groups = parse_hook_table(
        {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "x"}]}]},
        "user:/c.toml",
    )
    assert groups[0].hooks[0].timeout == 60
    with pytest.raises(HookShapeError, match="unknown hook event"):
        parse_hook_table({"BeforeTool": []}, "user:x")
    user = tmp_path / "config.toml"
    user.write_text(
        '[[hooks.PreToolUse]]\nmatcher = "bash"\nhooks = [{ command = "x", timeout = -1 }]\n'
    )
    with pytest.raises(ConfigError) as err:
        load_config(tmp_path, user_config=user, environ={})
    text = str(err.value)
    assert "config.toml:3 [hooks.PreToolUse[0].hooks[0].timeout]" in text
    assert "positive number of seconds" in text


def test_project_hooks_need_a_trusted_folder(tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "reasonix.toml").write_text(
        '[[hooks.Stop]]\nhooks = [{ type = "command", command = "echo project" }]\n'
    )
    user = tmp_path / "config.toml"
    user.write_text('[[hooks.Stop]]\nhooks = [{ type = "command", command = "echo user" }]\n')
    trusted = load_config(proj, user_config=user, environ={}, trust=True)
    assert [g.hooks[0].command for g in trusted.hooks] == ["echo user", "echo project"]
    assert trusted.hooks[1].from_project and not trusted.hooks[0].from_project
    untrusted = load_config(proj, user_config=user, environ={}, trust=False)
    assert [g.hooks[0].command for g in untrusted.hooks] == ["echo user"]
    assert any("hooks" in note for note in untrusted.ignored)


# -- through reasonix run -------------------------------------------------------------------


@pytest.mark.slow
def test_pre_tool_use_exit_2_blocks_and_the_model_reads_why(project: Project) -> None:
    command = _script(project, "validate.py", BASH_VALIDATOR)
    _user_hooks(project, _hook("PreToolUse", command, "Bash", timeout=30))
    (project.root / "build").mkdir()
    project.ex.push(
        Reply.call("bash", {"command": "rm -rf build"}),
        Reply.text("The hook refused the deletion."),
    )
    proc = project.run("run", "--yes", "clean the build folder")
    assert proc.returncode == 0, proc.stderr
    assert (project.root / "build").is_dir()
    (result,) = _tool_results(project, 1)
    assert "blocked by a PreToolUse hook" in result
    assert "Use trash-put instead of rm -rf; nothing was deleted." in result
    (event,) = _log(project)
    assert event["hook_event_name"] == "PreToolUse"
    assert event["tool_name"] == "Bash"
    assert event["tool_input"]["command"] == "rm -rf build"
    assert event["cwd"] == str(project.root.resolve())
    assert event["session_id"] and event["tool_use_id"]
    assert event["permission_mode"] == "default"
    transcript = Path(event["transcript_path"])
    assert json_lines(transcript.read_text())[-1]["role"] == "assistant"


@pytest.mark.slow
def test_pre_tool_use_json_decisions(project: Project) -> None:
    decide = _script(
        project,
        "decide.py",
        """\
        import json, sys
        data = json.load(sys.stdin)
        command = data["tool_input"].get("command", "")
        decisions = {"touch ok && echo ok": "allow", "touch no": "deny", "touch ask": "ask"}
        decision = decisions.get(command)
        if decision:
            print(json.dumps({"hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": decision,
                "permissionDecisionReason": f"policy says {decision}",
            }}))
        """,
    )
    _user_hooks(project, _hook("PreToolUse", decide, "bash"))
    project.ex.push(
        Reply.call("bash", {"command": "touch ok && echo ok"}),
        Reply.call("bash", {"command": "touch no"}),
        Reply.call("bash", {"command": "touch ask"}),
    )
    # Headless in ask mode: "allow" from the user's hook runs without a question; "deny"
    # refuses with the hook's reason; "ask" and no decision both need an approver there is not.
    # (Two refused steps in a row end the turn as refused, so "no decision" gets its own run.)
    proc = project.run("run", "--output-format", "json", "try the commands")
    assert proc.returncode == 3, proc.stderr
    allowed, denied = (_tool_results(project, i)[-1] for i in range(1, 3))
    assert allowed.startswith("ok")
    assert "blocked by a PreToolUse hook: policy says deny" in denied
    (result,) = json_lines(proc.stdout)
    assert result["stop_reason"] == "refused"
    assert "needs approval" in result["permission_denials"][-1]["reason"]
    project.ex.push(Reply.call("bash", {"command": "touch other"}), Reply.text("done"))
    proc = project.run("run", "and another")
    assert proc.returncode == 3, proc.stderr
    assert "needs approval" in _tool_results(project, 4)[-1]


@pytest.mark.slow
def test_a_projects_hook_may_tighten_but_not_allow(project: Project) -> None:
    """A trusted project's .claude/settings.json hook runs, but its "allow" is not obeyed."""
    allow = _script(
        project,
        "allow.py",
        """\
        import json
        print(json.dumps({"hookSpecificOutput": {"permissionDecision": "allow"}}))
        """,
    )
    settings = project.root / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(
        json.dumps(
            {
                "hooks": {
                    "PreToolUse": [
                        {"matcher": "Bash", "hooks": [{"type": "command", "command": allow}]}
                    ]
                }
            }
        )
    )
    project.ex.push(Reply.call("bash", {"command": "touch hi"}), Reply.text("done"))
    proc = project.run("run", "say hi")
    assert proc.returncode == 3, proc.stderr
    assert "needs approval" in _tool_results(project, 1)[-1]


@pytest.mark.slow
def test_post_tool_use_block_reason_joins_the_result(project: Project) -> None:
    post = _script(
        project,
        "post.py",
        """\
        import json, sys
        data = json.load(sys.stdin)
        with open("hook-log.jsonl", "a") as log:
            log.write(json.dumps(data) + "\\n")
        if data["tool_input"].get("file_path", "").endswith(".py"):
            print(json.dumps({"decision": "block", "reason": "Run the formatter on it."}))
        """,
    )
    _user_hooks(project, _hook("PostToolUse", post, "Edit|Write"))
    project.ex.push(
        Reply.call("write_file", {"path": "app.py", "content": "x=1\n"}),
        Reply.text("Noted."),
    )
    proc = project.run("run", "--yes", "write app.py")
    assert proc.returncode == 0, proc.stderr
    (result,) = _tool_results(project, 1)
    assert result.endswith("[PostToolUse hook] Run the formatter on it.")
    (event,) = _log(project)
    assert event["hook_event_name"] == "PostToolUse" and event["tool_name"] == "Write"
    assert event["tool_response"]["success"] is True


@pytest.mark.slow
def test_user_prompt_submit_context_and_block(project: Project) -> None:
    prompt = _script(
        project,
        "prompt.py",
        """\
        import json, sys
        data = json.load(sys.stdin)
        if "password" in data["prompt"]:
            print("Prompts may not contain secrets.", file=sys.stderr)
            sys.exit(2)
        print(json.dumps({"hookSpecificOutput": {
            "hookEventName": "UserPromptSubmit",
            "additionalContext": "The release branch is frozen.",
        }}))
        """,
    )
    _user_hooks(project, _hook("UserPromptSubmit", prompt))
    project.ex.push(Reply.text("Understood."))
    proc = project.run("run", "plan the release")
    assert proc.returncode == 0, proc.stderr
    request = project.ex.requests[0]
    last = request.messages[-1]["content"]
    assert last.startswith("plan the release\n\n")
    assert last.endswith("The release branch is frozen.")
    assert "frozen" not in request.messages[0]["content"]
    proc = project.run("run", "--output-format", "json", "my password is hunter2")
    assert len(project.ex.requests) == 1  # the blocked prompt never reached the model
    (result,) = json_lines(proc.stdout)
    assert result["stop_reason"] == "prompt_blocked"
    assert "Prompts may not contain secrets." in result["result"]
    assert proc.returncode == 3


@pytest.mark.slow
def test_stop_hook_continues_the_turn_once(project: Project) -> None:
    stop = _script(
        project,
        "stop.py",
        """\
        import json, sys
        data = json.load(sys.stdin)
        with open("hook-log.jsonl", "a") as log:
            log.write(json.dumps(data) + "\\n")
        if not data["stop_hook_active"]:
            print(json.dumps({"decision": "block", "reason": "Run the tests before stopping."}))
        """,
    )
    _user_hooks(project, _hook("Stop", stop))
    project.ex.push(Reply.text("Done, I think."), Reply.text("Tests pass now."))
    proc = project.run("run", "fix it")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "Tests pass now."
    second = project.ex.requests[1].messages
    assert second[-2]["content"] == "Done, I think."
    assert second[-1] == {"role": "user", "content": "Run the tests before stopping."}
    assert [e["stop_hook_active"] for e in _log(project)] == [False, True]


@pytest.mark.slow
def test_session_start_and_end(project: Project) -> None:
    start = _script(
        project,
        "start.py",
        """\
        import json, sys
        data = json.load(sys.stdin)
        with open("hook-log.jsonl", "a") as log:
            log.write(json.dumps(data) + "\\n")
        if data["hook_event_name"] == "SessionStart":
            print("Today's focus: the parser.")
        """,
    )
    _user_hooks(project, _hook("SessionStart", start, "startup") + _hook("SessionEnd", start))
    project.ex.push(Reply.text("ok"))
    proc = project.run("run", "hello")
    assert proc.returncode == 0, proc.stderr
    sent = without_environment(project.ex.requests[0].messages[-1]["content"])
    assert sent.endswith("Today's focus: the parser.")
    events = _log(project)
    assert [(e["hook_event_name"], e.get("source") or e.get("reason")) for e in events] == [
        ("SessionStart", "startup"),
        ("SessionEnd", "other"),
    ]
    # Resuming is not "startup": that matcher does not fire, SessionEnd still does.
    project.ex.push(Reply.text("again"))
    proc = project.run("run", "-c", "hello again")
    assert proc.returncode == 0, proc.stderr
    assert [e["hook_event_name"] for e in _log(project)][2:] == ["SessionEnd"]


@pytest.mark.slow
def test_a_timeout_and_a_crash_are_reported_and_the_turn_goes_on(project: Project) -> None:
    _user_hooks(
        project,
        '[[hooks.PreToolUse]]\nmatcher = "*"\nhooks = [\n'
        '  { type = "command", command = "sleep 30", timeout = 1 },\n'
        f'  {{ type = "command", command = "{PY} -c \'raise RuntimeError(1)\'" }},\n'
        '  { type = "command", command = "/nonexistent/hook" },\n]\n',
    )
    project.ex.push(Reply.call("bash", {"command": "echo survived"}), Reply.text("fine"))
    proc = project.run("run", "--yes", "--output-format", "stream-json", "go")
    assert proc.returncode == 0, proc.stderr
    lines = json_lines(proc.stdout)
    notices = [
        e["message"] for e in lines if e.get("kind") == "notice" and e.get("code") == "hook_failed"
    ]
    assert any("`sleep 30` timed out" in n for n in notices)
    assert any("exit code 1" in n and "RuntimeError" in n for n in notices)
    assert any("/nonexistent/hook" in n and "exit code 127" in n for n in notices)
    assert _tool_results(project, 1)[-1].startswith("survived")
    assert lines[-1]["result"] == "fine"


# -- through the session façade -------------------------------------------------------------


class AllowAll:
    async def approve(self, request: ApprovalRequest) -> ApprovalAnswer:
        return ApprovalAnswer.allow_once()


async def test_pre_compact_and_notification(tmp_path: Path) -> None:
    ws, cfg = tmp_path / "ws", tmp_path / "cfg"
    ws.mkdir()
    cfg.mkdir()
    log = tmp_path / "log.jsonl"
    script = tmp_path / "log.py"
    script.write_text(LOGGER.replace("hook-log.jsonl", str(log)))
    (cfg / "config.toml").write_text(
        _hook("PreCompact", f"{PY} {script}") + _hook("Notification", f"{PY} {script}")
    )
    async with FakeDeepSeekServer() as ex, FakeDeepSeekServer() as pl:
        (ws / "reasonix.toml").write_text(
            fake_project_toml(ex.base_url, pl.base_url, key_env=KEY_ENV)
        )
        environ = {KEY_ENV: "sk-test", "REASONIX_CONFIG_DIR": str(cfg)}
        config = load_config(
            ws,
            user_config=cfg / "config.toml",
            environ=environ,
            overrides={"planner.enabled": False},
        )
        store = SessionStore(tmp_path / "sessions.db")
        session = await AgentSession.open(
            config, ws, store=store, approver=AllowAll(), environ=environ
        )
        try:
            ex.push(Reply.call("bash", {"command": "touch hi"}), Reply.text("said hi"))
            await session.run_turn("say hi")
            await session.compact()
        finally:
            await session.aclose()
            store.close()
    events = json_lines(log.read_text())
    kinds = [(e["hook_event_name"], e.get("trigger") or e.get("message")) for e in events]
    assert ("Notification", "reasonix needs your permission to use bash") in kinds
    assert ("PreCompact", "manual") in kinds
