"""Issue 28, invocation habits from Claude Code and Codex, through the real ``reasonix`` process:
``reasonix "prompt"`` opens the app with that first message, ``reasonix -p`` is ``run``, piped
standard input reaches the model as an attachment, and Claude Code's flags (``--max-turns``,
``--allowedTools``/``--disallowedTools``, ``--append-system-prompt``, ``--add-dir``,
``--permission-mode``) do what ours do."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from reasonix.app.environment import without_environment
from reasonix.app.headless import MAX_PIPED_INPUT
from reasonix.testing import Reply
from tests.support.project import Project, json_lines, project
from tests.support.tui import Terminal

__all__ = ["project"]

pytestmark = pytest.mark.slow


def last_user_text(project: Project, request: int = 0) -> str:
    sent = project.ex.requests[request].messages[-1]["content"]
    assert isinstance(sent, str)
    return without_environment(sent)


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty")
def test_a_first_word_that_is_no_command_opens_the_app_with_it(project: Project) -> None:
    project.ex.push(Reply.text("This project is tiny."))
    term = Terminal(project, "explain this project")
    try:
        term.wait("This project is tiny.")
    finally:
        term.close()
    assert last_user_text(project).strip() == "explain this project"


def test_dash_p_is_run(project: Project) -> None:
    project.ex.push(Reply.text("printed answer"))
    proc = project.run("-p", "say it", "--output-format", "json")
    assert proc.returncode == 0, proc.stderr
    (result,) = json_lines(proc.stdout)
    assert result["result"] == "printed answer"
    assert last_user_text(project).strip() == "say it"


def test_usage_errors_name_reasonix_once(project: Project) -> None:
    proc = project.run("--effort")  # a flag without its value
    assert proc.returncode == 2
    assert "reasonix: reasonix:" not in proc.stderr
    assert "reasonix: argument --effort: expected one argument" in proc.stderr
    proc = project.run("run", "--output-format", "xml", "x")
    assert "reasonix: run: argument --output-format" in proc.stderr


def test_a_piped_log_reaches_the_model_and_the_result_says_so(project: Project) -> None:
    project.ex.push(Reply.text("The build fails on a missing semicolon."))
    log = "compiling...\nerror: expected ';' at line 42 (MARKER-7731)\n"
    proc = project.run("run", "--output-format", "json", "why does this fail", stdin=log)
    assert proc.returncode == 0, proc.stderr
    (result,) = json_lines(proc.stdout)
    sent = last_user_text(project)
    assert sent.startswith("why does this fail")
    assert "MARKER-7731" in sent
    assert result["piped_input"] == {
        "bytes": len(log.encode()),
        "attached_bytes": len(log.encode()),
        "truncated": False,
    }


def test_a_large_pipe_is_cut_and_the_cut_said(project: Project) -> None:
    project.ex.push(Reply.text("ok"))
    big = "x" * (MAX_PIPED_INPUT + 5000) + "TAIL-END"
    proc = project.run("run", "--output-format", "json", "summarise", stdin=big)
    assert proc.returncode == 0, proc.stderr
    (result,) = json_lines(proc.stdout)
    assert result["piped_input"]["truncated"] is True
    assert result["piped_input"]["bytes"] == len(big)
    sent = last_user_text(project)
    assert "TAIL-END" not in sent
    assert f"only the first {MAX_PIPED_INPUT} shown" in sent


def test_dash_p_with_only_a_pipe_takes_the_task_from_it(project: Project) -> None:
    project.ex.push(Reply.text("done"))
    proc = project.run("-p", stdin="list the files\n")
    assert proc.returncode == 0, proc.stderr
    assert last_user_text(project).strip() == "list the files"


def test_max_turns_limits_the_steps(project: Project) -> None:
    project.ex.push(
        Reply.call("ls", {"path": "."}),
        Reply.call("ls", {"path": "."}),
        Reply.call("ls", {"path": "."}),
    )
    proc = project.run("-p", "look around", "--max-turns", "2", "--output-format", "json")
    (result,) = json_lines(proc.stdout)
    assert result["stop_reason"] == "step_limit", result
    assert len(project.ex.requests) == 2


def test_disallowed_tools_in_claude_codes_names_refuse(project: Project) -> None:
    (project.root / "notes.txt").write_text("secret plan\n")
    project.ex.push(
        Reply.call("read_file", {"path": "notes.txt"}),
        Reply.text("I could not read it."),
    )
    proc = project.run(
        "-p", "read notes.txt", "--yes", "--disallowedTools", "Read", "--output-format", "json"
    )
    (result,) = json_lines(proc.stdout)
    assert [d["tool"] for d in result["permission_denials"]] == ["read_file"], result
    tool_reply = project.ex.requests[1].messages[-1]["content"]
    assert "secret plan" not in tool_reply


def test_a_disallowed_flag_adds_to_the_configured_deny_rules(project: Project) -> None:
    project.write_user_config('[permissions]\ndeny = ["write_file"]\n')
    project.ex.push(
        Reply.call("write_file", {"path": "a.txt", "content": "a\n"}),
        Reply.text("no"),
    )
    proc = project.run(
        "-p", "write a.txt", "--yes", "--disallowedTools", "Bash(rm:*)", "--output-format", "json"
    )
    (result,) = json_lines(proc.stdout)
    assert [d["tool"] for d in result["permission_denials"]] == ["write_file"], result
    assert not (project.root / "a.txt").exists()


def test_allowed_tools_in_claude_codes_form_allow_a_command(project: Project) -> None:
    project.ex.push(
        Reply.call("bash", {"command": "echo allowed-ran"}),
        Reply.text("ran it"),
    )
    proc = project.run(
        "-p",
        "echo",
        "--allowedTools",
        "Bash(echo:*)",
        "--output-format",
        "json",
        "--sandbox",
        "off",
    )
    (result,) = json_lines(proc.stdout)
    assert result["permission_denials"] == [], result
    assert "allowed-ran" in project.ex.requests[1].messages[-1]["content"]


def test_permission_mode_takes_claude_codes_names(project: Project) -> None:
    project.ex.push(
        Reply.call("write_file", {"path": "new.txt", "content": "hi\n"}),
        Reply.text("written"),
    )
    proc = project.run("-p", "write", "--permission-mode", "acceptEdits", "--output-format", "json")
    (result,) = json_lines(proc.stdout)
    assert result["permission_denials"] == [], result
    assert (project.root / "new.txt").read_text() == "hi\n"


def test_append_system_prompt_rides_at_the_tail_of_the_first_message(project: Project) -> None:
    project.ex.push(Reply.text("ok"))
    proc = project.run("-p", "hello", "--append-system-prompt", "Answer in French.")
    assert proc.returncode == 0, proc.stderr
    request = project.ex.requests[0]
    system = request.messages[0]["content"]
    assert "Answer in French." not in system
    sent = last_user_text(project)
    assert sent.startswith("hello")
    assert sent.rstrip().endswith("Answer in French.\n</appended-instructions>")


def test_add_dir_lets_the_tools_read_another_folder(project: Project, tmp_path: Path) -> None:
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "info.txt").write_text("OTHER-FOLDER-42\n")
    project.ex.push(
        Reply.call("read_file", {"path": str(other / "info.txt")}),
        Reply.text("read"),
    )
    proc = project.run("-p", "read it", "--add-dir", str(other), "--output-format", "json")
    assert proc.returncode == 0, proc.stderr
    assert "OTHER-FOLDER-42" in project.ex.requests[1].messages[-1]["content"]
