"""Regenerate the README's screenshots of an interactive session.

Runs the real ``reasonix`` in a pseudo-terminal against local fake model servers with a scripted
scenario (a bug fixed with an approved edit, the tests run, a summary table), reads the screen
through a terminal emulator (pyte), and writes what a person saw at three moments as SVG with
Rich's exporter (and the same screens as text beside them): ``docs/approval.svg`` (the diff
shown before an edit is approved), ``docs/working.svg`` (the live status line while the model
is slow to answer) and ``docs/session.svg`` (the finished turn and the idle toolbar).

    .venv/bin/python scripts/readme_screenshot.py

Needs the test extra (``pip install -e ".[test]"``: pexpect, pyte). Nothing leaves the machine.
"""

from __future__ import annotations

import io
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pexpect
import pyte
from rich.console import Console
from rich.style import Style
from rich.text import Text

from reasonix.testing import FakeDeepSeekServer, Fault, Reply
from reasonix.testing.project import fake_project_toml

ROOT = Path(__file__).resolve().parent.parent
ROWS, COLS = 34, 100
CALC = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
TEST = (
    "from calc import add, mul\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
    "def test_mul():\n    assert mul(2, 3) == 6\n"
)
SUMMARY = (
    "Fixed `add` in calc.py: it subtracted instead of adding.\n\n"
    "| test | before | after |\n|------|--------|-------|\n"
    "| test_add | failed | passed |\n| test_mul | passed | passed |\n\n"
    "Verified with `python -m pytest -q` (2 passed).\n"
)


class _Screen(pyte.Screen):  # type: ignore[misc]
    """Answers cursor-position requests as a real terminal does."""

    child: Any = None

    def write_process_input(self, data: str) -> None:
        if self.child is not None:
            self.child.send(data)


def _slow(reply: Reply, seconds: float) -> Reply:
    return Reply(
        content=reply.content,
        reasoning=reply.reasoning,
        tool_calls=reply.tool_calls,
        fault=Fault(stall_seconds=seconds),
    )


def _colour(name: str) -> str | None:
    if name in ("default", ""):
        return None
    if re.fullmatch(r"[0-9a-fA-F]{6}", name):
        return f"#{name}"
    return {"brown": "yellow"}.get(name, name)


def _to_svg(screen: pyte.Screen, path: Path, title: str) -> None:
    console = Console(
        file=io.StringIO(), record=True, width=COLS, force_terminal=True, color_system="truecolor"
    )
    for y in range(screen.lines):
        row = screen.buffer[y]
        text = Text()
        for x in range(screen.columns):
            ch = row[x]
            fg, bg = _colour(ch.fg), _colour(ch.bg)
            if ch.reverse:
                fg, bg = bg or "black", fg or "white"
            text.append(
                ch.data or " ", Style(color=fg, bgcolor=bg, bold=ch.bold, italic=ch.italics)
            )
        text.rstrip()
        console.print(text, soft_wrap=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    console.save_svg(str(path), title=title)
    (path.with_suffix(".txt")).write_text("\n".join(r.rstrip() for r in screen.display) + "\n")
    print(f"wrote {path.relative_to(ROOT)}")


def main() -> int:
    with (
        tempfile.TemporaryDirectory() as tmp,
        FakeDeepSeekServer() as ex,
        FakeDeepSeekServer() as pl,
    ):
        base = Path(tmp)
        proj, data, cfg = base / "calc-project", base / "data", base / "cfg"
        for folder in (proj, data, cfg):
            folder.mkdir()
        (proj / "calc.py").write_text(CALC)
        (proj / "test_calc.py").write_text(TEST)
        (proj / "reasonix.toml").write_text(
            fake_project_toml(ex.base_url, pl.base_url, key_env="REASONIX_FAKE_KEY")
        )
        (cfg / "config.toml").write_text(
            f"[trust]\nfolders = [{json.dumps(str(proj))}]\n\n"
            '[permissions]\nallow = ["bash(python -m pytest*)"]\n'
        )
        ex.push(
            Reply.calls(
                ("read_file", {"path": "calc.py"}),
                ("read_file", {"path": "test_calc.py"}),
                reasoning="The test for add fails; read the code and its test first.",
            ),
            Reply.call(
                "edit_file",
                {"path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"},
                reasoning="add subtracts; it must add.",
            ),
            _slow(Reply.call("bash", {"command": "python -m pytest -q"}), 1.0),
            _slow(Reply.text(SUMMARY, reasoning="Both tests pass now."), 2.0),
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith(("REASONIX_", "DEEPSEEK_"))}
        env.pop("NO_COLOR", None)
        env.update(
            REASONIX_FAKE_KEY="sk-demo",
            REASONIX_DATA_DIR=str(data),
            REASONIX_CONFIG_DIR=str(cfg),
            TERM="xterm-256color",
            PYTHONUNBUFFERED="1",
        )
        screen = _Screen(COLS, ROWS)
        stream = pyte.Stream(screen)
        child = pexpect.spawn(
            sys.executable,
            ["-m", "reasonix"],
            cwd=str(proj),
            env=env,
            encoding="utf-8",
            dimensions=(ROWS, COLS),
        )
        screen.child = child

        def wait(pattern: str, timeout: float = 60) -> None:
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                try:
                    stream.feed(child.read_nonblocking(65536, timeout=0.05))
                except pexpect.TIMEOUT:
                    pass
                if re.search(pattern, "\n".join(screen.display)):
                    return
            raise SystemExit(f"the screen never showed {pattern!r}")

        try:
            wait("/help for commands")
            wait(r"session \$")
            child.send("fix the failing test in @calc.py and run the tests\r")
            wait(r"Allow\?")
            time.sleep(0.5)
            wait(r"Allow\?")
            _to_svg(
                screen, ROOT / "docs" / "approval.svg", "reasonix: an edit waiting for approval"
            )
            child.send("y\r")
            wait(r"esc to interrupt")
            wait(r"executor · [1-9]s · ")
            _to_svg(screen, ROOT / "docs" / "working.svg", "reasonix: waiting for the model")
            wait(r"── done")
            wait(r"session \$0\.0*[1-9]")
            _to_svg(screen, ROOT / "docs" / "session.svg", "reasonix: a finished turn")
            child.send("/exit\r")
            wait("saved")
        finally:
            child.close(force=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
