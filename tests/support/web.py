"""The real ``python -m reasonix serve`` as a subprocess, for the dashboard's tests: start it in
a :class:`~tests.support.project.Project`, read the one URL line it prints, stop it."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from tests.support.project import Project

URL_LINE = re.compile(r"^http://(127\.0\.0\.1|\[::1\]):(\d+)/#token=([A-Za-z0-9_-]{40,})$")


@dataclass
class Served:
    """A running dashboard: its printed URL, base address, port and token."""

    url: str
    base: str
    port: int
    token: str
    process: subprocess.Popen[str]
    stdout_lines: list[str] = field(default_factory=list)
    stderr_path: Path | None = None

    @property
    def origin(self) -> str:
        return self.base

    def stderr(self) -> str:
        return self.stderr_path.read_text() if self.stderr_path else ""


@contextmanager
def serve(
    project: Project, *args: str, env: dict[str, str] | None = None, timeout: float = 180
) -> Iterator[Served]:
    """Start ``reasonix serve --port 0 ARGS`` in the project and yield it once it printed its
    URL; stopped (SIGINT, as a user's Ctrl+C) on exit."""
    stderr_path = project.root.parent / f"serve-stderr-{os.getpid()}-{len(args)}.log"
    err = stderr_path.open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "reasonix", "serve", "--port", "0", *args],
        cwd=project.root,
        env=env or project.env(),
        stdout=subprocess.PIPE,
        stderr=err,
        text=True,
    )
    lines: list[str] = []
    ready = threading.Event()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line.rstrip("\n"))
            ready.set()
        ready.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        if not ready.wait(timeout) or not lines:
            process.kill()
            process.wait(30)
            raise AssertionError(f"serve printed no URL; stderr:\n{stderr_path.read_text()}")
        match = URL_LINE.match(lines[0])
        assert match, f"not the URL line: {lines[0]!r}"
        parts = urlsplit(lines[0])
        served = Served(
            url=lines[0],
            base=f"{parts.scheme}://{parts.netloc}",
            port=int(match.group(2)),
            token=match.group(3),
            process=process,
            stdout_lines=lines,
            stderr_path=stderr_path,
        )
        yield served
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(30)
        reader.join(30)
        if process.stdout is not None:
            process.stdout.close()
        err.close()
