"""``reasonix batch`` (the real command, local engine, a fake model server on loopback): a task
whose model asks the user ends with the stop reason ``needs_input`` and its questions in its
row, and is not counted as an error; the other task of the batch finishes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from reasonix.testing import FakeDeepSeekServer, Reply
from reasonix.testing.fake_server import RecordedRequest
from reasonix.testing.project import fake_project_toml

pytestmark = pytest.mark.slow

KEY_ENV = "REASONIX_FAKE_KEY"
QUESTION = {
    "question": "Keep the old API?",
    "header": "API",
    "options": [
        {"label": "Keep", "description": "deprecate it first"},
        {"label": "Drop", "description": "remove it now"},
    ],
    "multiSelect": False,
}


def model(request: RecordedRequest) -> Reply:
    first = next(str(m["content"]) for m in request.messages if m["role"] == "user")
    if first.startswith("[asks]"):
        return Reply.call("ask", {"questions": [QUESTION]})
    return Reply.text("finished")


def test_a_task_that_asks_ends_with_needs_input_and_its_questions(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "README.md").write_text("# repo\n")
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(
        json.dumps({"id": "asks", "repo": str(repo), "task": "[asks] change the API"})
        + "\n"
        + json.dumps({"id": "plain", "repo": str(repo), "task": "[plain] say hi"})
        + "\n"
    )
    with FakeDeepSeekServer(handler=model) as server:
        config_dir = tmp_path / "cfg"
        config_dir.mkdir()
        (config_dir / "config.toml").write_text(
            fake_project_toml(server.base_url, server.base_url, key_env=KEY_ENV, max_steps=6)
        )
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("REASONIX_", "DEEPSEEK_", "RAY_")) and k != "PYTEST_CURRENT_TEST"
        }
        env.update(
            {
                KEY_ENV: "sk-test",
                "REASONIX_CONFIG_DIR": str(config_dir),
                "REASONIX_DATA_DIR": str(tmp_path / "data"),
                "NO_COLOR": "1",
            }
        )
        proc = subprocess.run(
            [sys.executable, "-m", "reasonix", "batch", str(tasks), "--out", "out"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = {
        r["id"]: r
        for r in map(json.loads, (tmp_path / "out" / "results.jsonl").read_text().splitlines())
    }
    asked = rows["asks"]
    assert asked["stop_reason"] == "needs_input" and asked["exit_code"] == 4
    assert asked["questions"] == [QUESTION]
    assert asked["error_class"] is None
    assert rows["plain"]["stop_reason"] == "done" and "questions" not in rows["plain"]
