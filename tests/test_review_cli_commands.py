"""Review findings for the command line: options given before the command are honoured."""

from __future__ import annotations

from reasonix.testing import Reply
from tests.test_cli_support import KEY_ENV, Project, json_lines, project

__all__ = ["project"]


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
