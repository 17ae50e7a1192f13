"""A folder the user trusts, with two fake servers, for the permission-rule attacks through
the real CLI: the user's ``[permissions]`` in their own config, one bash call by the model per
run, headless. (No tests here.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from reasonix.testing import FakeDeepSeekServer, Reply
from reasonix.testing.project import fake_project_toml

KEY_ENV = "REASONIX_FAKE_KEY"


@dataclass
class RulesLab:
    root: Path
    cfg: Path
    data: Path
    home: Path
    ex: FakeDeepSeekServer
    pl: FakeDeepSeekServer

    def user_config(self, permissions: str) -> None:
        """The user's config.toml: the fake servers, trust in :attr:`root`, ``permissions``."""
        text = fake_project_toml(self.ex.base_url, self.pl.base_url, key_env=KEY_ENV, max_steps=5)
        trust = f"\n[trust]\nfolders = [{json.dumps(str(self.root))}]\n"
        (self.cfg / "config.toml").write_text(text + trust + f"\n[permissions]\n{permissions}\n")

    def bash(self, command: str, *flags: str) -> subprocess.CompletedProcess[str]:
        """``reasonix run FLAGS --no-planner`` headless, where the model runs ``command``."""
        self.ex.push(Reply.call("bash", {"command": command}), Reply.text("done"))
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "LANG": "C.UTF-8",
            "REASONIX_CONFIG_DIR": str(self.cfg),
            "REASONIX_DATA_DIR": str(self.data),
            "NO_COLOR": "1",
            KEY_ENV: "sk-test",
        }
        argv = ["run", *flags, "--no-planner", "--output-format", "json", "go"]
        return subprocess.run(
            [sys.executable, "-m", "reasonix", *argv],
            cwd=self.root,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,  # a hang's bound on a loaded machine, not a timing claim
            check=False,
        )


@contextmanager
def rules_lab(tmp_path: Path) -> Iterator[RulesLab]:
    """``tmp_path/repo`` with ``README`` ("hello") and ``victim`` ("keep me"), empty config,
    data and home folders beside it, and the two servers while it is in use."""
    root = tmp_path / "repo"
    root.mkdir()
    for name in ("cfg", "data", "home"):
        (tmp_path / name).mkdir()
    (root / "README").write_text("hello\n")
    (root / "victim").write_text("keep me\n")
    with FakeDeepSeekServer() as ex, FakeDeepSeekServer() as pl:
        yield RulesLab(root, tmp_path / "cfg", tmp_path / "data", tmp_path / "home", ex, pl)
