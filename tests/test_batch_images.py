"""A batch task line's ``images`` reach the executor as image parts (real ``reasonix batch``
against the fake server); a line naming a file that is no image fails before any request."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

import pytest

from reasonix.testing import FakeDeepSeekServer, Reply
from reasonix.testing.project import fake_project_toml
from tests.support.cli import cli_env
from tests.support.images import png

pytestmark = pytest.mark.slow


def batch(tmp_path: Path, url: str, line: dict[str, object]) -> subprocess.CompletedProcess[str]:
    cfg = tmp_path / "cfg"
    cfg.mkdir(exist_ok=True)
    (cfg / "config.toml").write_text(fake_project_toml(url, url, max_steps=4))
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(line) + "\n")
    return subprocess.run(
        [sys.executable, "-m", "reasonix", "batch", str(tasks), "--out", "out"],
        cwd=tmp_path,
        env=cli_env(tmp_path / "data", cfg),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_a_task_lines_images_reach_the_executor(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "README.md").write_text("# repo\n")
    shot = png(12, 9, seed=6)
    (tmp_path / "shot.png").write_bytes(shot)
    line = {"id": "ui", "repo": "repo", "task": "what is shown?", "images": ["shot.png"]}
    with FakeDeepSeekServer([Reply.text("a chart")]) as srv:
        proc = batch(tmp_path, srv.base_url, line)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        user = srv.requests[0].messages[-1]
    url = "data:image/png;base64," + base64.b64encode(shot).decode()
    assert user["content"][-1] == {"type": "image_url", "image_url": {"url": url}}


def test_a_task_line_with_no_image_fails_before_any_request(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (tmp_path / "notes.png").write_text("just text\n")
    line = {"id": "ui", "repo": "repo", "task": "look", "images": ["notes.png"]}
    with FakeDeepSeekServer() as srv:
        proc = batch(tmp_path, srv.base_url, line)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert "not a JPEG, PNG, GIF or WebP" in proc.stderr
        assert srv.requests == []
