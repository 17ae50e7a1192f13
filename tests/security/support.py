"""Shared set-up for the security suite: a workspace inside a folder that holds a secret next to
it, a fake home folder with credentials, the user's own ``config.toml`` pointing both roles at
FakeDeepSeekServers on loopback, and a runner for the real ``python -m reasonix`` process.
(No tests here.)"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from reasonix.testing import FakeDeepSeekServer, Reply
from reasonix.testing.project import fake_project_toml
from tests.support.cli import FAKE_KEY_ENV, cli_env, run_cli

KEY_ENV = FAKE_KEY_ENV
#: The API key the agent holds; a probe that prints it has read the agent's environment.
KEY_VALUE = "sk-agent-secret-7f3a9c"
SECRET_NEXT_DOOR = "secret-next-to-the-workspace-41d2"
SSH_KEY = "-----BEGIN OPENSSH PRIVATE KEY----- fake-ssh-key-9b1e"
AWS_KEY = "aws_secret_access_key = fake-aws-key-c07d"


@dataclass
class Attack:
    """One attempt: what the model runs and how to tell it worked."""

    name: str
    tool: str
    args: dict[str, Any]


@dataclass
class Outcome:
    """What one CLI run did: its process result and each tool call's result text."""

    proc: subprocess.CompletedProcess[str]
    results: list[str]
    result: dict[str, Any] = field(default_factory=dict)


@dataclass
class Lab:
    """A temp world: ``root`` is the workspace; ``tmp`` holds ``secret.txt`` next to it."""

    tmp: Path
    root: Path
    home: Path
    config_dir: Path
    data: Path
    ex: FakeDeepSeekServer
    pl: FakeDeepSeekServer

    def write_user_config(self, extra: str = "") -> None:
        """The user's own config: providers on loopback, then ``extra`` tables."""
        base = fake_project_toml(self.ex.base_url, self.pl.base_url, key_env=KEY_ENV)
        # A run of refused probes ends neither as refused nor as a stall: every probe is tried.
        base = base.replace("[executor]\n", "[executor]\nmax_steps = 80\nrefused_steps = 200\n", 1)
        base = base.replace("[planner]\n", "[planner]\nstall_rounds = 200\n", 1)
        (self.config_dir / "config.toml").write_text(base + "\n" + extra)

    def env(self, **extra: str) -> dict[str, str]:
        return cli_env(
            self.data, self.config_dir, key=KEY_VALUE, **{"HOME": str(self.home), **extra}
        )

    def cli(
        self, *args: str, env: Mapping[str, str] | None = None, timeout: float = 300
    ) -> subprocess.CompletedProcess[str]:
        return run_cli(args, cwd=self.root, env=env or self.env(), timeout=timeout)

    def attack(
        self,
        attacks: Sequence[Attack],
        *flags: str,
        env: Mapping[str, str] | None = None,
    ) -> Outcome:
        """One ``reasonix run`` in which the scripted model makes each call in turn."""
        for a in attacks:
            self.ex.push(Reply.call(a.tool, a.args))
        self.ex.push(Reply.text("done"))
        first = len(self.ex.requests)
        proc = self.cli("run", "--no-planner", "--output-format", "json", *flags, "probe", env=env)
        requests = self.ex.requests[first:]
        results = []
        for req in requests[1:]:
            last = req.messages[-1]
            results.append(str(last.get("content", "")) if last.get("role") == "tool" else "")
        lines = [json.loads(x) for x in proc.stdout.splitlines() if x.strip().startswith("{")]
        self.ex.reset_cache()
        return Outcome(proc, results, lines[-1] if lines else {})


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Lab]:
    tmp = tmp_path / "parent"
    root = tmp / "proj"
    home = tmp_path / "home"
    for folder in (root, home / ".ssh", home / ".aws"):
        folder.mkdir(parents=True)
    (tmp / "secret.txt").write_text(SECRET_NEXT_DOOR + "\n")
    (home / ".ssh" / "id_rsa").write_text(SSH_KEY + "\n")
    (home / ".aws" / "credentials").write_text("[default]\n" + AWS_KEY + "\n")
    (home / ".bashrc").write_text("# the user's own bashrc\n")
    with FakeDeepSeekServer() as ex, FakeDeepSeekServer() as pl:
        lab = Lab(tmp, root, home, tmp_path / "cfg", tmp_path / "data", ex, pl)
        lab.config_dir.mkdir()
        lab.write_user_config()
        yield lab


def record(request: pytest.FixtureRequest, kind: str, tried: int, worked: int) -> None:
    """Add to the suite's tally of attacks per class."""
    request.node.user_properties.append(("attacks", (kind, tried, worked)))


class HitCounter:
    """A loopback HTTP server outside any sandbox; ``hits`` counts requests that reached it."""

    def __init__(self) -> None:
        counter = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                counter.hits += 1
                counter.paths.append(self.path)
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.hits = 0
        self.paths: list[str] = []
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> HitCounter:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def hits() -> Iterator[HitCounter]:
    with HitCounter() as counter:
        yield counter


def path_without(tmp: Path, *missing: str) -> str:
    """A ``PATH`` of one folder linking every program on ours except ``missing``: the seam that
    makes a program absent for a real subprocess."""
    folder = tmp / ("bin-without-" + "-".join(missing))
    folder.mkdir(exist_ok=True)
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        if not entry or not os.path.isdir(entry):
            continue
        for name in os.listdir(entry):
            target = os.path.join(entry, name)
            link = folder / name
            if name in missing or link.exists() or link.is_symlink():
                continue
            if os.access(target, os.X_OK) and not os.path.isdir(target):
                link.symlink_to(target)
    assert shutil.which(missing[0], path=str(folder)) is None
    return str(folder)


def processes_with_arg(marker: str) -> list[int]:
    """Pids with an argument containing ``marker`` (zombies excluded)."""
    want = marker.encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                cmdline = f.read()
            with open(f"/proc/{name}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if any(want in arg for arg in cmdline.split(b"\0")) and state not in (b"Z", b"X"):
            found.append(int(name))
    return found


def still_running(marker: str) -> list[int]:
    """Processes with ``marker`` in an argument that are alive after SIGKILL had time to arrive
    (waits on the kernel, not on a timing claim: a process being killed goes within moments)."""
    import time

    for _ in range(200):
        pids = processes_with_arg(marker)
        if not pids:
            return []
        time.sleep(0.05)
    return processes_with_arg(marker)


def kill_all(pids: Sequence[int]) -> None:
    import signal

    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
