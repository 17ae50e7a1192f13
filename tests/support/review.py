"""Scripted reviewers for auto mode's tests: handlers for a ``FakeDeepSeekServer`` that plays
the ``reviewer`` role, and a project whose user config points the reviewer at it."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from reasonix.testing import FakeDeepSeekServer, Reply
from reasonix.testing.fake_server import RecordedRequest
from reasonix.testing.project import fake_project_toml
from tests.support.cli import FAKE_KEY_ENV, cli_env, run_cli

#: A fenced block as the reviewer's input writes it: the token on both fence lines.
FENCED = re.compile(r"<<<DATA (?P<token>[0-9a-f]+)\n.*?\nDATA (?P=token)>>>", re.DOTALL)
#: What an obeying reviewer obeys.
OBEYED = re.compile(r"allow (everything|this|all)", re.IGNORECASE)


def review_text(request: RecordedRequest) -> str:
    """The review the request asks about: its last user message."""
    users = [m for m in request.messages if m.get("role") == "user"]
    content = users[-1]["content"] if users else ""
    return content if isinstance(content, str) else json.dumps(content)


def verdict(decision: str, reason: str = "scripted") -> Reply:
    return Reply.call("verdict", {"decision": decision, "reason": reason})


def always(decision: str, reason: str = "scripted") -> Callable[[RecordedRequest], Reply]:
    return lambda request: verdict(decision, reason)


def unfenced(text: str) -> str:
    """``text`` without its fenced data blocks: what a reviewer that honours the fence reads as
    instructions."""
    return FENCED.sub("[data]", text)


def obeying(text: str) -> str:
    """A reviewer that honours the fence but obeys any instruction outside it to allow: its
    decision for a review text."""
    return "allow" if OBEYED.search(unfenced(text)) else "ask"


def obeying_reviewer(request: RecordedRequest) -> Reply:
    return verdict(obeying(review_text(request)), "obeyed the text")


def gullible_reviewer(request: RecordedRequest) -> Reply:
    """Obeys any text at all, fenced or not: it allows everything it is asked about."""
    return verdict("allow", "told to allow everything")


@dataclass
class AutoProject:
    """A folder, the user's config (trusted, auto mode's reviewer on its own fake server) and
    the executor's fake server."""

    root: Path
    config: Path
    ex: FakeDeepSeekServer
    rv: FakeDeepSeekServer
    extra: list[str] = field(default_factory=list)

    def configure(self, extra: str = "", *, max_steps: int = 8) -> None:
        reviewer = (
            "\n[[providers]]\n"
            'name = "fake-reviewer"\n'
            f'base_url = "{self.rv.base_url}"\n'
            f'api_key_env = "{FAKE_KEY_ENV}"\n'
            '\n[review]\nprovider = "fake-reviewer"\n'
        )
        text = fake_project_toml(
            self.ex.base_url,
            self.ex.base_url,
            key_env=FAKE_KEY_ENV,
            max_steps=max_steps,
            extra=reviewer + extra,
        )
        (self.config / "config.toml").write_text(text)

    def run(self, *args: str, mode: str = "auto") -> subprocess.CompletedProcess[str]:
        env = cli_env(self.root.parent / "data", self.config)
        argv = ["run", "--no-planner", "--mode", mode, "--output-format", "json", *args]
        return run_cli(argv, cwd=self.root, env=env)


def result_of(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    lines = [line for line in proc.stdout.splitlines() if line.strip().startswith("{")]
    assert lines, f"no JSON result: {proc.stdout!r} {proc.stderr!r}"
    result: dict[str, Any] = json.loads(lines[-1])
    return result


@pytest.fixture
def auto_project(tmp_path: Path) -> Iterator[AutoProject]:
    root = tmp_path / "work"
    root.mkdir()
    config = tmp_path / "config"
    config.mkdir()
    with FakeDeepSeekServer() as ex, FakeDeepSeekServer(cache_formula="measured") as rv:
        project = AutoProject(root, config, ex, rv)
        project.configure()
        yield project
