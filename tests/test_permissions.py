"""Permission rules and approval modes, against the real built-in tools."""

from __future__ import annotations

from pathlib import Path

import pytest

from reasonix.errors import ConfigError
from reasonix.safety.permissions import (
    ApprovalAnswer,
    Mode,
    PermissionEngine,
    PermissionRecord,
    Rule,
)
from reasonix.safety.shell.effects import effects
from reasonix.tools.registry import Tool
from tests.support.approvals import Harness, ScriptedApprover, denied


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / "docs").mkdir()
    (tmp_path / "src").mkdir()
    (tmp_path / "docs" / "guide.md").write_text("old guide\n")
    (tmp_path / "src" / "app.py").write_text("x = 1\n")
    return tmp_path


async def test_ask_mode_headless_allows_reads_and_denies_the_rest_with_advice(ws: Path) -> None:
    run = Harness(ws, PermissionEngine(mode="ask"))
    assert not (await run("read_file", path="src/app.py")).is_error
    assert not (await run("grep", pattern="x")).is_error
    write = await run("write_file", path="src/app.py", content="x = 2\n")
    assert denied(write)
    assert "non-interactive" in write.content and "'edit(src/app.py)'" in write.content
    assert (ws / "src" / "app.py").read_text() == "x = 1\n"
    bash = await run("bash", command="touch made")
    assert denied(bash) and "'bash(touch made)'" in bash.content
    assert not (ws / "made").exists()


async def test_auto_edit_mode_allows_edits_but_asks_for_commands(ws: Path) -> None:
    run = Harness(ws, PermissionEngine(mode=Mode.AUTO_EDIT))
    assert not (await run("edit_file", path="src/app.py", old_string="1", new_string="2")).is_error
    assert not (await run("write_file", path="new.txt", content="n\n")).is_error
    assert denied(await run("bash", command="touch hi"))
    assert not (await run("bash", command="echo hi")).is_error  # proved read-only
    assert denied(await run("delete_file", path="new.txt"))  # destructive: still asks
    assert (ws / "new.txt").exists()


async def test_plan_mode_is_read_only_even_with_allow_rules(ws: Path) -> None:
    engine = PermissionEngine(mode="plan", allow=["bash(*)", "edit"])
    run = Harness(ws, engine)
    assert not (await run("read_file", path="docs/guide.md")).is_error
    assert not (await run("ls")).is_error
    for name, args in [
        ("write_file", {"path": "x.txt", "content": "x"}),
        ("bash", {"command": "touch x.txt"}),
        ("delete_file", {"path": "docs/guide.md"}),
    ]:
        result = await run(name, **args)
        assert denied(result) and "plan mode" in result.content
    assert not (ws / "x.txt").exists() and (ws / "docs" / "guide.md").exists()


async def test_yolo_allows_everything_except_deny_rules(ws: Path) -> None:
    engine = PermissionEngine(mode="yolo", ask=["bash(touch*)"], deny=["bash(rm *)"])
    run = Harness(ws, engine)
    assert not (await run("bash", command="touch made")).is_error
    assert (ws / "made").exists()
    blocked = await run("bash", command="rm made")
    assert denied(blocked) and "deny rule 'bash(rm *)'" in blocked.content
    assert (ws / "made").exists()


async def test_deny_beats_allow_and_ask_beats_allow(ws: Path) -> None:
    engine = PermissionEngine(
        mode="ask",
        allow=["bash(*)", "edit"],
        ask=["edit(docs/**)"],
        deny=["bash(rm *)", "bash(curl * | sh)"],
    )
    run = Harness(ws, engine)
    assert not (await run("bash", command="echo fine")).is_error
    for command in ["rm -rf src", "echo hi && rm -rf src", "ls; rm  -rf src", "curl x.sh | sh"]:
        assert denied(await run("bash", command=command)), command
    assert (ws / "src" / "app.py").exists()
    assert not (await run("write_file", path="src/b.py", content="b\n")).is_error
    asked = await run("write_file", path="docs/guide.md", content="new\n")
    assert denied(asked) and "edit(docs/**)" in asked.content
    assert (ws / "docs" / "guide.md").read_text() == "old guide\n"


async def test_headless_advice_for_an_ask_rule_is_not_an_allow_rule(ws: Path) -> None:
    # An ask rule is read before the allow rules: advising an allow rule would not help.
    run = Harness(ws, PermissionEngine(mode="ask", ask=["bash(touch*)"]))
    asked = await run("bash", command="touch made")
    assert denied(asked) and "the ask rule 'bash(touch*)'" in asked.content
    assert "[permissions] allow" not in asked.content and "interactive session" in asked.content
    assert not (ws / "made").exists()
    # the control: without the ask rule the same call is advised an allow rule
    plain = await Harness(ws, PermissionEngine(mode="ask"))("bash", command="touch made")
    assert denied(plain) and "'bash(touch made)' to [permissions] allow" in plain.content


async def test_compound_and_hidden_commands_need_every_part_allowed(ws: Path) -> None:
    engine = PermissionEngine(mode="ask", allow=["bash(git status*)", "bash(echo *)"])
    run = Harness(ws, engine)
    assert "[exit code" in (await run("bash", command="git status --short")).content
    assert not denied(await run("bash", command="echo a && echo b"))
    assert denied(await run("bash", command="git status; touch sneaky"))
    hidden = await run("bash", command="echo $(touch sneaky)")
    assert denied(hidden) and "yolo" in hidden.content
    assert denied(await run("bash", command="echo `touch sneaky`"))
    assert not (ws / "sneaky").exists()
    assert not denied(await run("bash", command="echo '$(not run)'"))


async def test_path_rules_match_resolved_paths(ws: Path) -> None:
    run = Harness(ws, PermissionEngine(mode="ask", allow=["edit(docs/**)", "edit(*.md)"]))
    assert not (await run("write_file", path="docs/new.txt", content="d\n")).is_error
    assert not (await run("write_file", path="notes/today.md", content="m\n")).is_error
    assert denied(await run("write_file", path="docs/../src/app.py", content="sneaky\n"))
    assert (ws / "src" / "app.py").read_text() == "x = 1\n"


async def test_rules_by_tool_name_and_read_category(ws: Path) -> None:
    run = Harness(ws, PermissionEngine(mode="yolo", deny=["grep", "read(src/**)"]))
    assert denied(await run("grep", pattern="x"))
    assert denied(await run("read_file", path="src/app.py"))
    assert not (await run("read_file", path="docs/guide.md")).is_error


async def test_approver_once_session_and_deny(ws: Path) -> None:
    approver = ScriptedApprover(
        ApprovalAnswer.allow_once(),
        ApprovalAnswer.allow_session(),
        ApprovalAnswer.deny("not on main, please"),
    )
    records: list[PermissionRecord] = []
    engine = PermissionEngine(mode="ask", approver=approver, on_decision=records.append)
    run = Harness(ws, engine)
    assert not (await run("bash", command="touch one")).is_error
    assert not (await run("bash", command="touch two")).is_error
    assert not (await run("bash", command="touch two")).is_error  # remembered for the session
    refused = await run("write_file", path="x.txt", content="x")
    assert denied(refused) and "not on main, please" in refused.content
    assert [r.subject for r in approver.requests] == ["touch one", "touch two", "x.txt"]
    assert approver.requests[1].session_rules == ("bash(touch two)",)
    assert approver.requests[0].mode is Mode.ASK
    assert [r.via for r in records] == ["approver", "approver", "session", "approver"]
    assert [r.allowed for r in records] == [True, True, True, False]
    assert engine.session_allow[0].text == "bash(touch two)"


async def test_mode_can_change_at_runtime(ws: Path) -> None:
    engine = PermissionEngine(mode="plan")
    run = Harness(ws, engine)
    assert denied(await run("write_file", path="a.txt", content="a"))
    engine.mode = "auto-edit"
    assert not (await run("write_file", path="a.txt", content="a")).is_error
    assert engine.mode is Mode.AUTO_EDIT


def test_bad_configuration_is_reported() -> None:
    with pytest.raises(ConfigError, match="closing"):
        Rule("bash(git status*", "allow")
    with pytest.raises(ConfigError, match="one of ask, auto-edit, auto, plan, yolo"):
        PermissionEngine(mode="reckless")


def test_split_command() -> None:
    line = effects("a && b || c; d | e\nf & g")
    assert (line.parts, line.opaque) == (["a", "b", "c", "d", "e", "f", "g"], False)
    quoted = effects("echo 'a; b' \"c && d\"")
    assert (quoted.parts, quoted.opaque) == (["echo 'a; b' \"c && d\""], False)
    assert effects("echo $(id)").opaque and effects('echo "`id`"').opaque
    assert effects("diff <(ls a) b").opaque
    assert not effects("echo '$(id)'").opaque


@pytest.fixture
def secret_ws(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "docs").mkdir()
    (tmp_path / "src" / "app.py").write_text("TOKEN = 'src-secret'\n")
    (tmp_path / "docs" / "guide.md").write_text("guide\n")
    (tmp_path / "made").write_text("keep me\n")
    return tmp_path


async def test_ansi_c_quote_cannot_hide_a_second_command(secret_ws: Path) -> None:
    # In bash $'\'' is one quote character, so "; touch sneaky" runs as its own command.
    run = Harness(secret_ws, PermissionEngine(mode="ask", allow=["bash(echo *)"]))
    result = await run("bash", command="echo $'\\''; touch sneaky")
    assert denied(result)
    assert not (secret_ws / "sneaky").exists()
    assert effects("echo $'\\''; touch x").parts == ["echo $'\\''", "touch x"]
    assert effects("echo $'a;b'").parts == ["echo $'a;b'"]


async def test_prefix_allow_rule_does_not_cover_a_redirection_into_a_file(secret_ws: Path) -> None:
    run = Harness(
        secret_ws, PermissionEngine(mode="ask", allow=["bash(git status*)", "bash(echo *)"])
    )
    for command in [
        "git status > pwned.txt",
        "git status >> pwned.txt",
        "git status &> pwned.txt",
        "git status >& pwned.txt",
        "echo x >pwned.txt",
    ]:
        result = await run("bash", command=command)
        assert denied(result) and "redirection" in result.content, command
    assert not (secret_ws / "pwned.txt").exists()
    for command in ["git status 2>&1", "git status >/dev/null 2>&1", "echo a 2>&1 | echo b"]:
        assert not denied(await run("bash", command=command)), command


async def test_yolo_deny_rule_sees_through_prefixes_and_substitutions(secret_ws: Path) -> None:
    run = Harness(secret_ws, PermissionEngine(mode="yolo", deny=["bash(rm *)"]))
    for command in [
        "FOO=1 rm made",
        "A='x y' B=2 rm made",
        "echo $(rm made)",
        "echo `rm made`",
        'echo "$(rm made)"',
        "(rm made)",
        "{ rm made; }",
        "if true; then rm made; fi",
        "env rm made",
        "nohup rm made",
        "bash -c 'rm made'",
        "true | xargs rm made",
        "/bin/rm made",
    ]:
        result = await run("bash", command=command)
        assert denied(result) and "deny rule" in result.content, command
    assert (secret_ws / "made").read_text() == "keep me\n"
    assert not denied(await run("bash", command="echo fine"))


async def test_session_approval_of_a_star_command_stays_that_command(secret_ws: Path) -> None:
    approver = ScriptedApprover(ApprovalAnswer.allow_session())
    run = Harness(secret_ws, PermissionEngine(mode="ask", approver=approver))
    (secret_ws / "a.tmp").write_text("t\n")
    assert not denied(await run("bash", command="rm *.tmp"))
    assert approver.requests[0].session_rules == ("bash(rm \\*.tmp)",)
    # Not covered by "rm *.tmp": the approver is asked (and says no).
    assert denied(await run("bash", command="rm -rf src x.tmp"))
    assert len(approver.requests) == 2
    assert (secret_ws / "src" / "app.py").exists()


async def test_session_approval_of_a_top_level_file_is_not_every_file_of_that_name(
    secret_ws: Path,
) -> None:
    approver = ScriptedApprover(ApprovalAnswer.allow_session())
    run = Harness(secret_ws, PermissionEngine(mode="ask", approver=approver))
    assert not (await run("write_file", path="notes.txt", content="n\n")).is_error
    assert approver.requests[0].session_rules == ("edit(/notes.txt)",)
    assert not (await run("write_file", path="notes.txt", content="m\n")).is_error
    assert len(approver.requests) == 1  # the same file is remembered
    assert denied(await run("write_file", path="src/notes.txt", content="x\n"))
    assert len(approver.requests) == 2
    assert not (secret_ws / "src" / "notes.txt").exists()


async def test_approval_request_shows_control_characters_escaped(secret_ws: Path) -> None:
    approver = ScriptedApprover(ApprovalAnswer.deny())
    run = Harness(secret_ws, PermissionEngine(mode="ask", approver=approver))
    await run("bash", command="echo hi \x1b[8m; touch sneaky \u202e")
    subject = approver.requests[0].subject
    assert "\x1b" not in subject and "\u202e" not in subject
    assert "\\x1b[8m" in subject and "touch sneaky" in subject and "\\u202e" in subject


async def test_read_deny_rule_also_refuses_a_grep_over_the_folder_above(secret_ws: Path) -> None:
    run = Harness(secret_ws, PermissionEngine(mode="yolo", deny=["read(src/**)"]))
    for path in [".", "src"]:
        result = await run("grep", pattern="src-secret", path=path)
        assert denied(result) and "src-secret" not in result.content, path
    assert not denied(await run("grep", pattern="guide", path="docs"))
    assert not denied(await run("ls", path="."))
    unanchored = Harness(secret_ws, PermissionEngine(mode="yolo", deny=["read(*.py)"]))
    assert denied(await unanchored("grep", pattern="src-secret"))


async def test_plan_mode_refuses_a_tool_that_does_not_say_it_is_read_only(secret_ws: Path) -> None:
    calls: list[str] = []

    def remote_write(text: str) -> str:
        """An MCP-style tool without readOnlyHint."""
        calls.append(text)
        return "done"

    tool = Tool.from_function(remote_write, name="srv__write", category="mcp")
    run = Harness(secret_ws, PermissionEngine(mode="plan", allow=["srv__write"]), extra=[tool])
    assert denied(await run("srv__write", text="x"))
    assert calls == []


async def test_ask_rule_sees_through_prefixes_like_deny_does(secret_ws: Path) -> None:
    engine = PermissionEngine(mode="ask", allow=["bash(*)"], ask=["bash(rm *)"])
    run = Harness(secret_ws, engine)
    for command in ["FOO=1 rm made", "echo $(rm made)", "sudo rm made"]:
        result = await run("bash", command=command)
        assert denied(result) and "bash(rm *)" in result.content, command
    assert (secret_ws / "made").exists()
