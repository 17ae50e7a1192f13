"""A missing optional part is a notice, never a traceback: with the MCP SDK unimportable (a
shim on ``PYTHONPATH`` shadows it, as a broken or partial install would), a configured server
is reported as not started and the turn runs; without any server configured the SDK is never
imported at all."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from reasonix.testing import Reply
from tests.support.project import Project, json_lines, project

__all__ = ["project"]

pytestmark = pytest.mark.slow


def add_user_config(project: Project, text: str) -> None:
    """Add ``text`` to the user's config.toml (which also says the project folder is trusted)."""
    path = project.config_dir / "config.toml"
    path.write_text((path.read_text() if path.exists() else "") + "\n" + text)


def without_sdk(project: Project, tmp_path: Path) -> dict[str, str]:
    shim = tmp_path / "shim"
    for name in ("mcp", "mcp_types"):
        (shim / name).mkdir(parents=True)
        (shim / name / "__init__.py").write_text(
            f"raise ImportError('No module named {name} (the SDK is missing)')\n"
        )
    path = os.pathsep.join(p for p in (str(shim), os.environ.get("PYTHONPATH", "")) if p)
    return project.env(PYTHONPATH=path)


def configure_server(project: Project) -> None:
    add_user_config(
        project,
        f'[[mcp.servers]]\nname = "time"\ncommand = {json.dumps(sys.executable)}\n'
        'args = ["-c", "pass"]\n',
    )


def test_missing_sdk_is_a_notice_and_the_turn_runs(project: Project, tmp_path: Path) -> None:
    configure_server(project)
    env = without_sdk(project, tmp_path)
    project.ex.push(Reply.text("answered without MCP"))
    proc = project.run("run", "--output-format", "stream-json", "hello", env=env)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    events = json_lines(proc.stdout)
    notices = [
        e for e in events if e.get("kind") == "notice" and e.get("code") == "mcp_unavailable"
    ]
    assert len(notices) == 1, events
    assert "time" in notices[0]["message"] and "pip install" in notices[0]["message"]
    assert events[-1]["result"] == "answered without MCP"

    project.ex.push(Reply.text("text mode too"))
    proc = project.run("run", "hello", env=env)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout.strip() == "text mode too"
    assert "MCP servers not started (time)" in proc.stderr


def test_control_the_shim_does_break_the_sdk(project: Project, tmp_path: Path) -> None:
    import subprocess

    proc = subprocess.run(
        [sys.executable, "-c", "import mcp.client.session"],
        env=without_sdk(project, tmp_path),
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert proc.returncode != 0 and "the SDK is missing" in proc.stderr


def test_no_server_no_sdk_needed(project: Project, tmp_path: Path) -> None:
    project.ex.push(Reply.text("plain"))
    proc = project.run("run", "hello", env=without_sdk(project, tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "plain"
