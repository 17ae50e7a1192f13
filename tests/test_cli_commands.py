"""``reasonix --help`` and every documented subcommand, ``doctor`` and ``demo``."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from reasonix.cli.main import COMMANDS, USAGE, main
from reasonix.testing import Reply
from tests.support.project import KEY_ENV, Project, json_lines, project

__all__ = ["project"]

pytestmark = pytest.mark.slow


def test_help_lists_every_command_and_each_has_help(project: Project) -> None:
    documented = re.findall(r"^(?:usage:|\s{6}) reasonix (\w+)", USAGE, re.MULTILINE)
    assert sorted(documented) == sorted(COMMANDS)
    proc = project.run("--help")
    assert proc.returncode == 0
    assert proc.stdout == USAGE
    for command in COMMANDS:
        proc = project.run(command, "--help")
        assert proc.returncode == 0, (command, proc.stderr)
        assert f"usage: reasonix {command}" in proc.stdout
    for action in ("list", "show", "export"):
        proc = project.run("sessions", action, "--help")
        assert proc.returncode == 0, proc.stderr
    # Every flag the usage text documents is a real option of the parser.
    run_help = project.run("run", "--help").stdout
    flags = re.findall(r"^\s+(?:-\w, )?(--[\w-]+)", USAGE, re.MULTILINE)
    assert len(flags) >= 8
    for flag in flags:
        if flag != "--version":
            assert flag in run_help, flag


def test_version_and_unknown_command(project: Project) -> None:
    assert main(["--version"]) == 0
    # A first word that is no command is the app's first message (issue 28), but one that
    # looks like a mistyped command is refused before anything is sent.
    proc = project.run("sesions")
    assert proc.returncode == 2
    assert "did you mean 'sessions'" in proc.stderr
    proc = project.run("sessions")
    assert proc.returncode == 2


def test_doctor_reports_and_exit_codes(project: Project, tmp_path: Path) -> None:
    proc = project.run("doctor")
    out = proc.stdout
    assert "configuration is valid" in out
    assert f"{KEY_ENV} is set" in out
    # the fake lists today's models (the legacy alias: test_deepseek_models.py)
    assert "serves deepseek-flash" in out
    assert "serves deepseek-v4-pro" in out
    assert "data folder" in out and "writable" in out
    for tool in ("rg", "git"):
        assert re.search(rf"\b{tool}\b", out)
    assert "sk-test" not in out
    assert proc.returncode == 0, out

    env = project.env()
    del env[KEY_ENV]
    proc = project.run("doctor", env=env)
    assert proc.returncode == 1
    assert "API key missing" in proc.stdout
    assert "fix:" in proc.stdout
    assert f"export {KEY_ENV}=" in proc.stdout

    # An endpoint nobody listens on.
    toml = project.root / "reasonix.toml"
    toml.write_text(toml.read_text().replace(project.pl.base_url, "http://127.0.0.1:9"))
    proc = project.run("doctor")
    assert proc.returncode == 1
    assert "unreachable" in proc.stdout
    assert "providers.fake-planner.base_url" in proc.stdout

    toml.write_text("[executor\n")
    proc = project.run("doctor")
    assert proc.returncode == 1
    assert "reasonix.toml:1" in proc.stdout


def test_demo_runs_offline(tmp_path: Path) -> None:
    env = {
        "PATH": "/usr/bin:/bin",
        "REASONIX_DATA_DIR": str(tmp_path / "data"),
        "REASONIX_CONFIG_DIR": str(tmp_path / "cfg"),
        "HOME": str(tmp_path),
        "NO_COLOR": "1",
    }
    proc = subprocess.run(
        [sys.executable, "-m", "reasonix", "demo"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "scripted demo" in out
    assert "submit_plan" in out
    assert "edit_file(calc.py)" in out
    assert "+    return a + b" in out
    assert "step 1 completed" in out
    assert re.search(r"executor\s+4\s", out)
    assert re.search(r"planner\s+2\s", out)
    assert "Demo finished" in out


def test_doctor_reports_a_failing_mcp_server(project: Project) -> None:
    project.write_toml('\n[[mcp.servers]]\nname = "broken"\ncommand = "/nonexistent/mcp-server"\n')
    proc = project.run("doctor")
    assert proc.returncode == 1
    assert "MCP broken" in proc.stdout
    assert "failed" in proc.stdout
    assert "fix:" in proc.stdout


def test_options_before_the_command_are_not_reset_by_it(project: Project) -> None:
    # argparse lets a subcommand's defaults overwrite what the main parser already parsed:
    # `reasonix --model X config` showed the default model, `--mode plan run --yes` wrote files.
    proc = project.run("--model", "deepseek-v4-pro", "config")
    assert proc.returncode == 0, proc.stderr
    line = next(x for x in proc.stdout.splitlines() if x.startswith("executor.model"))
    assert '"deepseek-v4-pro"' in line and line.endswith("# flag")

    project.ex.push(
        Reply.call("write_file", {"path": "new.txt", "content": "hi\n"}), Reply.text("done")
    )
    proc = project.run("--mode", "plan", "run", "--yes", "--output-format", "json", "write it")
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert not (project.root / "new.txt").exists()
    first = json_lines(proc.stdout)[0]["session_id"]

    project.ex.push(Reply.text("continued"))
    proc = project.run("-c", "run", "--output-format", "json", "go on")
    assert proc.returncode == 0, proc.stderr
    assert json_lines(proc.stdout)[0]["session_id"] == first

    proc = project.run("-c", "run", "-r", first, "go on")
    assert proc.returncode == 2
    assert "cannot be combined" in proc.stderr


def test_doctor_on_an_endpoint_that_wants_a_key(project: Project) -> None:
    # Without a key, the real DeepSeek answers GET /models with 401: that is not "unreachable,
    # check the network"; with a wrong key it is the key that needs fixing.
    import http.server
    import threading

    class Refuse(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(401)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Refuse)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        toml = project.root / "reasonix.toml"
        toml.write_text(toml.read_text().replace(project.ex.base_url, url))
        env = project.env()
        del env[KEY_ENV]
        proc = project.run("doctor", env=env)
        assert proc.returncode == 1
        assert "API key missing" in proc.stdout
        assert "unreachable" not in proc.stdout, proc.stdout
        assert f"reachable; set {KEY_ENV} to verify the model" in proc.stdout

        proc = project.run("doctor")
        assert proc.returncode == 1
        assert f"the API key in {KEY_ENV} was refused (401)" in proc.stdout
        assert "check the network" not in proc.stdout
    finally:
        server.shutdown()
        server.server_close()
