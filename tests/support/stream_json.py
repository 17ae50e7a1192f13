"""One ``reasonix run`` process fed turn by turn (``--input-format stream-json``), for tests
that act between turns: a file changed after a turn ended, then ``/rewind``. (No tests here.)"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from reasonix.testing import FakeDeepSeekServer
from reasonix.testing.project import fake_project_toml
from tests.support.cli import FAKE_KEY_ENV, cli_env

#: the executor alone, unasked, reading and writing JSON lines
ARGV = (
    "run",
    "--no-planner",
    "--mode",
    "yolo",
    "--input-format",
    "stream-json",
    "--output-format",
    "stream-json",
)
RESULT = '{"type": "result"'


def _line(text: str) -> str:
    return json.dumps({"text": text}) + "\n"


class StreamJsonRun:
    """``python -m reasonix run`` (:data:`ARGV`) in ``cwd`` with ``env``: :meth:`turn` sends one
    input and waits for its result; :meth:`finish` sends the last ones and waits for the end.
    Used as a context manager, it kills a process still running on the way out."""

    def __init__(self, cwd: Path, env: Mapping[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "reasonix", *ARGV],
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )

    def turn(self, text: str) -> str:
        """Send ``text``; its result's text, once the turn has ended."""
        stdin, stdout = self.proc.stdin, self.proc.stdout
        assert stdin is not None and stdout is not None
        stdin.write(_line(text))
        stdin.flush()
        for line in stdout:
            if line.startswith(RESULT):
                return str(json.loads(line)["result"])
        raise AssertionError("the run ended without a result")

    def finish(self, *texts: str, timeout: float = 120) -> list[str]:
        """Send ``texts``, close the input and wait for the run to end: their results' texts
        (one each, or the assertion shows the output's end)."""
        out, _ = self.proc.communicate("".join(_line(t) for t in texts), timeout)
        results = [json.loads(x) for x in out.splitlines() if x.startswith(RESULT)]
        assert len(results) == len(texts), out[-2000:]
        return [str(r["result"]) for r in results]

    def __enter__(self) -> StreamJsonRun:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None and not pipe.closed:
                pipe.close()


@dataclass
class Work:
    """A workspace for :class:`StreamJsonRun`: its folder, the run's environment, the server."""

    root: Path
    env: dict[str, str]
    ex: FakeDeepSeekServer


@contextmanager
def workspace(tmp_path: Path, files: Mapping[str, str], config: str = "") -> Iterator[Work]:
    """``tmp_path/w`` holding ``files``, both roles on one fake server (up to 5 steps a turn),
    the user's config.toml with ``config`` after that."""
    root, cfg = tmp_path / "w", tmp_path / "cfg"
    root.mkdir()
    cfg.mkdir()
    for name, text in files.items():
        (root / name).write_text(text)
    with FakeDeepSeekServer() as ex:
        text = fake_project_toml(ex.base_url, ex.base_url, key_env=FAKE_KEY_ENV, max_steps=5)
        (cfg / "config.toml").write_text(text + config)
        yield Work(root, cli_env(tmp_path / "data", cfg), ex)
