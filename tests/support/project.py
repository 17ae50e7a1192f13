"""Shared set-up for the CLI tests: a project folder whose ``reasonix.toml`` points both roles at
FakeDeepSeekServers on loopback, private config/data folders, and a runner for the real
``python -m reasonix`` process. (No tests here.)"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from reasonix.testing import FakeDeepSeekServer
from reasonix.testing.project import fake_project_toml
from tests.support.cli import FAKE_KEY_ENV, cli_env, run_cli

KEY_ENV = FAKE_KEY_ENV


def project_toml(ex: FakeDeepSeekServer, pl: FakeDeepSeekServer, extra: str = "") -> str:
    return fake_project_toml(ex.base_url, pl.base_url, key_env=KEY_ENV, max_steps=12, extra=extra)


@dataclass
class Project:
    """A temp project wired to two fake servers."""

    root: Path
    data: Path
    config_dir: Path
    ex: FakeDeepSeekServer
    pl: FakeDeepSeekServer

    def env(self, **extra: str) -> dict[str, str]:
        return cli_env(self.data, self.config_dir, **extra)

    def run(
        self,
        *args: str,
        stdin: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float = 300,  # a hang's bound, not a claim about speed: a loaded machine
    ) -> subprocess.CompletedProcess[str]:
        return run_cli(args, cwd=self.root, env=env or self.env(), stdin=stdin, timeout=timeout)

    def write_toml(self, extra: str = "") -> None:
        """The project's reasonix.toml, in a folder the user trusts in their own config.toml
        (so it applies; untrusted folders are tests/security/test_untrusted_repo.py's)."""
        (self.root / "reasonix.toml").write_text(project_toml(self.ex, self.pl, extra))
        if not (self.config_dir / "config.toml").exists():
            self.write_user_config()

    def write_user_config(self, text: str = "") -> None:
        """The user's own config.toml: ``text`` plus the entry that trusts the project folder."""
        self.config_dir.mkdir(parents=True, exist_ok=True)
        trust = f"[trust]\nfolders = [{json.dumps(str(self.root))}]\n"
        (self.config_dir / "config.toml").write_text(trust + text)


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Project]:
    root = tmp_path / "proj"
    root.mkdir()
    with FakeDeepSeekServer() as ex, FakeDeepSeekServer() as pl:
        p = Project(root, tmp_path / "data", tmp_path / "cfg", ex, pl)
        p.config_dir.mkdir()
        p.write_toml()
        yield p


def json_lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]
