"""Running ``reasonix run`` with images against a fake server, for the image CLI tests: a repo
with the user's config pointing both roles at one server, the run's exit code and output, and
the image URLs a request carried."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from reasonix.testing.fake_server import RecordedRequest
from reasonix.testing.project import fake_project_toml
from tests.support.cli import cli_env


def setup(tmp_path: Path, url: str, **kw: str) -> tuple[Path, dict[str, str]]:
    repo = tmp_path / "repo"
    repo.mkdir()
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    (cfg / "config.toml").write_text(fake_project_toml(url, url, max_steps=6, **kw))
    return repo, cli_env(tmp_path / "data", cfg)


def run(args: list[str], repo: Path, env: dict[str, str], stdin: bytes = b"") -> tuple[int, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "reasonix", "run", *args],
        cwd=repo,
        env=env,
        input=stdin,
        capture_output=True,
        timeout=300,
        check=False,
    )
    return proc.returncode, (proc.stdout + proc.stderr).decode("utf-8", "replace")


def image_urls(request: RecordedRequest) -> list[str]:
    urls = []
    for message in request.messages:
        content = message.get("content")
        if isinstance(content, list):
            urls += [p["image_url"]["url"] for p in content if p.get("type") == "image_url"]
    return urls
