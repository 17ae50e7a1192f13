"""A terminal as a person sees it, for the interactive-app tests: the real ``reasonix`` runs in a
pseudo-terminal (pexpect) and its output is fed to a terminal emulator (pyte), so a test reads
the screen rows, not the byte stream. (No tests here.)"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable

import pexpect
import pyte

from reasonix.testing import Fault, Reply
from tests.support.project import Project


class _AnsweringScreen(pyte.Screen):  # type: ignore[misc]
    """A screen that answers the app's cursor-position requests, as a real terminal does
    (prompt_toolkit draws its bottom toolbar only once it knows where the cursor is)."""

    def __init__(self, cols: int, rows: int, terminal: Terminal) -> None:
        super().__init__(cols, rows)
        self._terminal = terminal

    def write_process_input(self, data: str) -> None:
        self._terminal.child.send(data)


class Terminal:
    """``reasonix`` in a ``rows`` x ``cols`` pseudo-terminal, with a screen model."""

    def __init__(self, project: Project, *args: str, rows: int = 40, cols: int = 120) -> None:
        env = project.env(TERM="xterm-256color")
        env.pop("COLUMNS", None)
        env.pop("LINES", None)
        self.screen = _AnsweringScreen(cols, rows, self)
        self.stream = pyte.Stream(self.screen)
        self.log = ""
        self.child = pexpect.spawn(
            sys.executable,
            ["-m", "reasonix", *args],
            cwd=str(project.root),
            env=env,
            encoding="utf-8",
            timeout=60,  # each expect's bound: generous, for a loaded machine
            dimensions=(rows, cols),
        )

    def pump(self, seconds: float = 0.05) -> None:
        """Feed whatever the app wrote (waiting up to ``seconds``) into the screen."""
        deadline = time.monotonic() + seconds
        while True:
            try:
                data = self.child.read_nonblocking(65536, timeout=0.02)
            except pexpect.TIMEOUT:
                data = ""
            except pexpect.EOF:
                return
            if data:
                self.log += data
                self.stream.feed(data)
            elif time.monotonic() >= deadline:
                return

    def text(self) -> str:
        """The screen's rows as text (trailing spaces dropped)."""
        return "\n".join(row.rstrip() for row in self.screen.display)

    def rows(self) -> list[str]:
        return [row.rstrip() for row in self.screen.display]

    def wait(self, what: str | Callable[[str], bool], timeout: float = 120) -> str:
        """Wait until the screen shows ``what`` (a regex, or a predicate over the screen text);
        returns the screen text then."""
        check: Callable[[str], bool]
        if isinstance(what, str):
            pattern = re.compile(what)

            def check(screen: str) -> bool:
                return pattern.search(screen) is not None
        else:
            check = what
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.pump(0.05)
            screen = self.text()
            if check(screen):
                return screen
        raise AssertionError(f"the screen never showed {what!r}; it shows:\n{self.text()}")

    def ready(self, timeout: float = 120) -> str:
        """Wait for the banner and then the prompt: keys sent before the prompt is drawn reach
        the terminal in cooked mode (echoed, the Tab lost), which a loaded machine makes
        likely."""
        self.wait("/help for commands", timeout)
        return self.wait(lambda screen: any(r.startswith("›") for r in self.rows()), timeout)

    def send(self, keys: str) -> None:
        self.child.send(keys)

    def sendline(self, line: str) -> None:
        self.child.send(line + "\r")

    def resize(self, rows: int, cols: int) -> None:
        self.screen.resize(rows, cols)
        self.child.setwinsize(rows, cols)

    def close(self) -> None:
        self.child.close(force=True)


def slow(reply: Reply, seconds: float = 4.0) -> Reply:
    """``reply`` after ``seconds`` of silence: a model with latency."""
    return Reply(
        content=reply.content,
        reasoning=reply.reasoning,
        tool_calls=reply.tool_calls,
        fault=Fault(stall_seconds=seconds),
    )
