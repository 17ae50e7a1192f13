"""The scripted demo scenario: a tiny project with a failing test and one dual-model turn.

Used by ``reasonix demo`` and reusable by benchmarks: :func:`write_project` creates the
project, :func:`planner_script` / :func:`executor_script` are the replies the two fake model
servers give, :func:`project_toml` points a ``reasonix.toml`` at those servers, and
:func:`run_scenario` runs the whole turn through :class:`~reasonix.app.session.AgentSession` (the
same code path as the CLI) and returns the outcome.

The turn: the planner reads both files and submits a one-step plan whose verification
command runs the tests; the executor fixes ``calc.py`` with the real ``edit_file`` tool, runs
the tests with the real ``bash`` tool, and signs the step off with ``complete_step`` (the host
accepts it because it saw the command succeed). Nothing reaches the internet: the models are
:class:`~reasonix.testing.FakeDeepSeekServer` instances on loopback.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from reasonix.testing.project import fake_project_toml
from reasonix.testing.script import Reply

if TYPE_CHECKING:
    from reasonix.app.turn import TurnOutcome
    from reasonix.events import Sink
    from reasonix.store import SessionStore

KEY_ENV = "REASONIX_DEMO_KEY"
TASK = "The test in test_calc.py fails. Find the bug, fix it, and make the tests pass."

FILES: Mapping[str, str] = {
    "calc.py": (
        '"""Tiny arithmetic helpers."""\n\n\n'
        "def add(a: int, b: int) -> int:\n"
        '    """Return the sum of a and b."""\n'
        "    return a - b\n"
    ),
    "test_calc.py": (
        "import unittest\n\n"
        "from calc import add\n\n\n"
        "class AddTest(unittest.TestCase):\n"
        "    def test_add(self) -> None:\n"
        "        self.assertEqual(add(2, 3), 5)\n\n\n"
        'if __name__ == "__main__":\n'
        "    unittest.main()\n"
    ),
}


def test_command() -> str:
    """The verification command: this interpreter's unittest (no third-party packages)."""
    return f"{shlex.quote(sys.executable)} -m unittest -q test_calc"


def write_project(root: Path) -> None:
    """Create the demo project's files under ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    for name, text in FILES.items():
        (root / name).write_text(text, encoding="utf-8")


def project_toml(executor_url: str, planner_url: str) -> str:
    """A ``reasonix.toml`` pointing the executor and the planner at two fake servers."""
    permissions = f"""
[permissions]
mode = "auto-edit"
allow = [{_toml_str(f"bash({test_command()})")}]
"""
    header = "# Written by `reasonix demo`: both models are scripted fake servers on loopback.\n"
    return header + fake_project_toml(executor_url, planner_url, key_env=KEY_ENV, extra=permissions)


def _toml_str(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def planner_script() -> list[Reply]:
    """The planner: read both files, then submit a one-step plan."""
    cmd = test_command()
    return [
        Reply.calls(
            ("read_file", {"path": "calc.py"}),
            ("read_file", {"path": "test_calc.py"}),
            reasoning="The test expects add(2, 3) == 5. Let me read the code under test.",
        ),
        Reply.call(
            "submit_plan",
            {
                "objective": "Make test_calc pass by fixing add() in calc.py.",
                "steps": [
                    {
                        "title": "Fix add() in calc.py to return a + b, then run the tests",
                        "files": ["calc.py"],
                        "acceptance": "test_calc passes",
                        "verify": cmd,
                    }
                ],
                "risks": ["none: a one-character change covered by the test"],
                "requires_approval": False,
            },
            reasoning="add() subtracts instead of adding; one small step with a test run.",
        ),
    ]


def executor_script() -> list[Reply]:
    """The executor: edit, run the tests, sign the step off, report."""
    cmd = test_command()
    return [
        Reply.call(
            "edit_file",
            {"path": "calc.py", "old_string": "    return a - b", "new_string": "    return a + b"},
            reasoning="The plan says add() subtracts; replace the operator.",
        ),
        Reply.call("bash", {"command": cmd}, reasoning="Now run the verification command."),
        Reply.call(
            "complete_step",
            {"step": "1", "evidence": f"edited calc.py; `{cmd}` passed"},
            reasoning="The tests pass; sign the step off with that evidence.",
        ),
        Reply.text(
            "Fixed the bug: `add()` in calc.py subtracted its arguments; it now returns "
            "`a + b`. The test suite passes.",
            reasoning="Done; summarise for the user.",
        ),
    ]


async def run_scenario(
    root: Path,
    store: SessionStore,
    sink: Sink | None = None,
    *,
    executor_url: str,
    planner_url: str,
) -> TurnOutcome:
    """Write the project and its ``reasonix.toml``, then run the demo turn (planner forced)
    through an :class:`~reasonix.app.session.AgentSession`. The caller runs the two fake servers
    (scripted with :func:`planner_script` and :func:`executor_script`)."""
    from reasonix.app.session import AgentSession
    from reasonix.config import load_config

    write_project(root)
    (root / "reasonix.toml").write_text(project_toml(executor_url, planner_url), encoding="utf-8")
    environ = {KEY_ENV: "sk-demo-not-a-real-key"}
    config = load_config(root, environ=environ, user_config=root / ".no-user-config.toml")
    session = await AgentSession.open(config, root, store=store, sink=sink, environ=environ)
    try:
        return await session.run_turn(TASK, plan=True)
    finally:
        await session.aclose()
