"""Review findings for the command line: options given before the command are honoured."""

from __future__ import annotations

from reasonix.testing import Reply
from tests.test_cli_support import Project, json_lines, project

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
