"""``reasonix run``: output formats, exit codes, refusals, provider errors and config errors,
through the real ``python -m reasonix`` process against fake servers on loopback."""

from __future__ import annotations

import subprocess
import sys

import pytest

from reasonix.app.environment import without_environment
from reasonix.store import SessionStore
from reasonix.testing import Fault, Reply
from tests.support.project import KEY_ENV, Project, json_lines, project

__all__ = ["project"]

pytestmark = pytest.mark.slow

RESULT_KEYS = {
    "type",
    "result",
    "session_id",
    "turns",
    "duration_ms",
    "stop_reason",
    "route",
    "usage",
    "cost_usd",
    "is_error",
}


def test_json_result_schema(project: Project) -> None:
    project.ex.push(Reply.text("Hello from the executor."))
    proc = project.run("run", "--output-format", "json", "say hello")
    assert proc.returncode == 0, proc.stderr
    (result,) = json_lines(proc.stdout)
    assert set(result) >= RESULT_KEYS
    assert result["type"] == "result"
    assert result["result"] == "Hello from the executor."
    assert result["stop_reason"] == "done"
    assert result["route"] == "executor_only"
    assert result["is_error"] is False
    assert result["turns"] == 1
    assert isinstance(result["duration_ms"], int)
    assert set(result["usage"]) == {"executor"}
    assert result["usage"]["executor"]["requests"] == 1
    assert result["usage"]["executor"]["prompt_tokens"] > 0
    assert set(result["cost_usd"]) == {"executor", "total"}
    assert result["cost_usd"]["total"] == result["cost_usd"]["executor"]
    project.ex.assert_exhausted()
    assert project.pl.requests == []


def test_stream_json_events_then_result_and_task_from_stdin(project: Project) -> None:
    project.ex.push(Reply.text("streamed answer", reasoning="thinking about it"))
    proc = project.run("run", "--output-format", "stream-json", "-", stdin="what is 2+2?\n")
    assert proc.returncode == 0, proc.stderr
    lines = json_lines(proc.stdout)
    *events, result = lines
    kinds = [e["kind"] for e in events]
    assert kinds[:2] == ["init", "gate_decided"]
    for kind in ("turn_started", "reasoning_delta", "text_delta", "usage", "turn_ended"):
        assert kind in kinds
    assert all("role" in e for e in events)
    assert result["type"] == "result"
    assert result["result"] == "streamed answer"
    sent = project.ex.requests[0].messages[-1]["content"]
    assert without_environment(sent) == "what is 2+2?\n"


def test_text_output_prints_the_answer(project: Project) -> None:
    project.ex.push(Reply.text("plain answer"))
    proc = project.run("run", "say it")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "plain answer"


def test_refused_edit_in_headless_ask_mode_exits_3(project: Project) -> None:
    project.ex.push(
        Reply.call("write_file", {"path": "new.txt", "content": "hi\n"}),
        Reply.text("I could not write new.txt: permission was denied."),
    )
    proc = project.run("run", "--output-format", "json", "create new.txt")
    assert proc.returncode == 3, proc.stdout + proc.stderr
    (result,) = json_lines(proc.stdout)
    assert result["is_error"] is False
    assert result["stop_reason"] == "done"
    (denial,) = result["permission_denials"]
    assert denial["tool"] == "write_file"
    assert "allow" in denial["reason"]
    assert not (project.root / "new.txt").exists()
    # The model was told why, so it could tell the user.
    tool_msg = project.ex.requests[1].messages[-1]
    assert tool_msg["role"] == "tool"
    assert "Permission denied" in tool_msg["content"]


def test_yes_allows_what_would_ask(project: Project) -> None:
    project.ex.push(
        Reply.call("write_file", {"path": "new.txt", "content": "hi\n"}),
        Reply.text("Created new.txt."),
    )
    proc = project.run("run", "--yes", "--output-format", "json", "create new.txt")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (project.root / "new.txt").read_text() == "hi\n"
    assert json_lines(proc.stdout)[0]["permission_denials"] == []


def test_insufficient_balance_exits_1_and_says_top_up(project: Project) -> None:
    project.ex.push(Reply.failing(Fault(status=402)))
    proc = project.run("run", "--output-format", "json", "hello")
    assert proc.returncode == 1
    (result,) = json_lines(proc.stdout)
    assert result["is_error"] is True
    assert result["stop_reason"] == "error"
    assert "top up" in result["result"]

    project.ex.push(Reply.failing(Fault(status=402)))
    proc = project.run("run", "hello")
    assert proc.returncode == 1
    assert "top up" in proc.stderr


def test_declined_plan_exits_3(project: Project) -> None:
    project.pl.push(
        Reply.call(
            "submit_plan",
            {
                "objective": "Delete the old module",
                "steps": [{"title": "Remove old.py", "verify": "true"}],
                "requires_approval": True,
            },
        )
    )
    proc = project.run("run", "--plan", "--output-format", "json", "remove the old module")
    assert proc.returncode == 3, proc.stdout + proc.stderr
    (result,) = json_lines(proc.stdout)
    assert result["stop_reason"] == "plan_declined"
    assert result["route"] == "plan_and_execute"
    assert "planner" in result["usage"]
    assert project.ex.requests == []


def test_config_error_names_file_line_and_key(project: Project) -> None:
    toml = project.root / "reasonix.toml"
    toml.write_text(toml.read_text() + '\n[permissions]\nmode = "sometimes"\n')
    proc = project.run("run", "hello")
    assert proc.returncode == 2
    line_no = toml.read_text().splitlines().index('mode = "sometimes"') + 1
    assert f"reasonix.toml:{line_no} [permissions.mode]" in proc.stderr
    assert "auto-edit" in proc.stderr
    assert project.ex.requests == []

    proc = project.run("config")
    assert proc.returncode == 2
    assert "[permissions.mode]" in proc.stderr


def test_bad_flag_value_and_missing_key_exit_2(project: Project) -> None:
    proc = project.run("run", "--mode", "wild", "hello")
    assert proc.returncode == 2
    assert "permissions.mode" in proc.stderr

    env = project.env()
    del env[KEY_ENV]
    proc = project.run("run", "hello", env=env)
    assert proc.returncode == 2
    assert KEY_ENV in proc.stderr
    assert "reasonix demo" in proc.stderr
    assert "sk-test" not in proc.stderr + proc.stdout


def test_config_command_shows_sources(project: Project) -> None:
    proc = project.run("config", "--model", "deepseek-v4-pro")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    model_line = next(line for line in lines if line.startswith("executor.model"))
    assert '"deepseek-v4-pro"' in model_line
    assert model_line.endswith("# flag")
    base = next(line for line in lines if line.startswith("providers.fake-executor.base_url"))
    assert "project:" in base
    key = next(line for line in lines if line.startswith("providers.fake-executor.api_key ="))
    assert "(set)" in key
    assert "sk-test" not in proc.stdout


def test_no_planner_runs_executor_only(project: Project) -> None:
    project.ex.push(Reply.text("alone"))
    proc = project.run("run", "--no-planner", "--plan", "--output-format", "json", "1. a 2. b")
    assert proc.returncode == 0, proc.stderr
    (result,) = json_lines(proc.stdout)
    assert result["route"] == "executor_only"
    assert project.pl.requests == []


def test_max_cost_stops_the_run_with_exit_1(project: Project) -> None:
    project.ex.push(
        Reply.call("bash", {"command": "echo one"}),
        Reply.call("bash", {"command": "echo two"}),
    )
    proc = project.run(
        "run", "--yes", "--max-cost", "0.0000001", "--output-format", "json", "echo twice"
    )
    assert proc.returncode == 1, proc.stderr
    (result,) = json_lines(proc.stdout)
    assert result["stop_reason"] == "budget"
    assert "budget" in result["result"]
    assert "--max-cost" in result["result"]
    assert len(project.ex.requests) == 1  # stopped right after the first priced request


def test_provider_key_variables_and_key_files_stay_out_of_reach(project: Project) -> None:
    (project.root / "deploy.pem").write_text("-----BEGIN PRIVATE KEY-----\n")
    project.ex.push(
        Reply.calls(
            ("bash", {"command": f'echo "key=[${KEY_ENV}]"'}),
            ("read_file", {"path": "deploy.pem"}),
        ),
        Reply.text("done"),
    )
    proc = project.run("run", "--yes", "--no-planner", "--output-format", "json", "inspect")
    assert proc.returncode == 0, proc.stderr
    results = [m["content"] for m in project.ex.requests[1].messages if m["role"] == "tool"]
    assert "key=[]" in results[0]  # the provider's key variable was not passed to bash
    assert "sk-test" not in results[0]
    assert "PRIVATE KEY" not in results[1]  # the built-in read-deny list still applies


ANSWER = "fertig: 中文 ✓ \U0001f600"


@pytest.mark.parametrize("fmt", ["stream-json", "json", "text"])
def test_non_ascii_answer_with_a_non_utf8_stdout(project: Project, fmt: str) -> None:
    # e.g. Windows redirecting to a file (cp1252): printing the answer crashed after the turn.
    project.ex.push(Reply.text(ANSWER))
    env = project.env(PYTHONIOENCODING="cp1252")
    proc = subprocess.run(
        [sys.executable, "-m", "reasonix", "run", "--output-format", fmt, "sag was"],
        cwd=project.root,
        env=env,
        capture_output=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    if fmt == "text":
        assert proc.stdout.decode("cp1252").startswith("fertig: ")
        return
    lines = json_lines(proc.stdout.decode("utf-8"))  # every line valid JSON, in UTF-8
    assert lines[-1]["result"] == ANSWER
    if fmt == "stream-json":
        deltas = "".join(e["text"] for e in lines[:-1] if e["kind"] == "text_delta")
        assert deltas == ANSWER


@pytest.mark.parametrize("how", ["stdin", "argv"])
def test_task_that_is_not_utf8(project: Project, how: str) -> None:
    # A Latin-1 file piped in (or a Latin-1 argument) reached the store as lone surrogates
    # and crashed the run with a traceback.
    project.ex.push(Reply.text("ok"))
    task = "fix the caf\xe9 bug".encode("latin-1")
    args = ["-"] if how == "stdin" else [task]
    proc = subprocess.run(
        [sys.executable.encode(), b"-m", b"reasonix", b"run", b"--output-format", b"json", *args],
        cwd=project.root,
        env=project.env(),
        input=task if how == "stdin" else b"",
        capture_output=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    (result,) = json_lines(proc.stdout.decode())
    sent = project.ex.requests[0].messages[-1]["content"]
    assert without_environment(sent) == "fix the caf\ufffd bug"
    with SessionStore(project.data / "sessions.db") as store:
        info = store.get_session(result["session_id"])
    assert info is not None and info.title == "fix the caf\ufffd bug"
