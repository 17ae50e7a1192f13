"""A long scripted dual-model session against two FakeDeepSeekServers (one per role).

Four user turns: three planned ones (one of which stalls on a repeated failing command and is
re-planned) and a short follow-up, in a session opened as the CLI opens one (the same tools,
prompts, defaults and approver as ``reasonix run --yes``); the executor runs the real tools in a
temp workspace, and its context window is set so automatic compaction fires along the way.
The model's words are scripted; everything else (HTTP, SSE, sessions, tools, plan merge,
evidence checks, compaction) is the real code path.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.shipped import is_summary, shipped_session
from reasonix.events import CompactionEvent, PlanProduced, ReplanTriggered, UsageEvent
from reasonix.testing import Reply
from reasonix.testing.fake_server import RecordedRequest

__all__ = ["SessionRun", "is_summary", "run_session", "run_session_sync"]

EXECUTOR_MODEL = "deepseek-flash"
PLANNER_MODEL = "deepseek-v4-pro"
UNIT_TOKENS = 64
SUMMARY = (
    "Goal: build the text utilities package module by module.\n"
    "Decisions and findings: each module is a small pure function with a doctest-style check.\n"
    "Files changed: pkg/mod_*.py (one function each).\n"
    "Commands run and results that matter: python3 -c imports succeeded; make build failed "
    "(no Makefile), replaced by build.sh.\n"
    "Open problems: none.\nNext steps: continue with the remaining modules."
)

SOURCE = '''\
"""Text utilities: small pure functions, one per module."""


def normalise(text: str) -> str:
    """Collapse runs of whitespace and strip the ends."""
    return " ".join(text.split())


def words(text: str) -> list[str]:
    """The words of ``text`` in order."""
    return normalise(text).split(" ") if text.strip() else []
'''


def _module(turn: int, step: int) -> tuple[str, str]:
    name = f"pkg/mod_{turn}_{step}.py"
    body = SOURCE + f'\n\ndef step_{turn}_{step}(text: str) -> int:\n    """Count words."""\n'
    body += "    return len(words(text))\n"
    return name, body


def _plan(turn: int, modules: range, objective: str) -> Reply:
    return Reply.call(
        "submit_plan",
        {
            "objective": objective,
            "steps": [
                {
                    "title": f"Create {_module(turn, s)[0]} with step_{turn}_{s}",
                    "files": ["pkg/base.py"],
                    "acceptance": f"{_module(turn, s)[0]} imports",
                    "verify": f"test -s {_module(turn, s)[0]}",
                }
                for s in modules
            ],
            "risks": ["the package folder may be missing"],
        },
        reasoning=f"Turn {turn}: the base module is small; one step per module.",
    )


def _do_step(turn: int, module: int, step: int) -> list[Reply]:
    """Five executor steps per plan step: read, write, edit, verify, sign off."""
    path, body = _module(turn, module)
    return [
        Reply.call("read_file", {"path": "pkg/base.py"}, reasoning=f"Read base for {module}."),
        Reply.call("write_file", {"path": path, "content": body}, reasoning="Write the module."),
        Reply.call(
            "edit_file",
            {"path": path, "old_string": '"""Count words."""', "new_string": '"""Word count."""'},
            reasoning="Tighten the docstring.",
        ),
        Reply.call("bash", {"command": f"test -s {path}"}, reasoning="Verify."),
        Reply.call(
            "complete_step",
            {"step": str(step), "evidence": f"test -s {path} exited 0"},
            reasoning="Sign off.",
        ),
    ]


@dataclass
class SessionRun:
    """What the scripted session produced, for the cache and cost sections."""

    executor_requests: list[RecordedRequest]
    planner_requests: list[RecordedRequest]
    usage_events: list[UsageEvent]
    executor_steps: int
    planning_rounds: int
    replans: int
    compactions: int
    problems: list[str] = field(default_factory=list)

    def requests(self, role: str) -> list[RecordedRequest]:
        return self.executor_requests if role == "executor" else self.planner_requests


async def run_session(workdir: Path, *, steps_per_plan: int = 3) -> SessionRun:
    """The session, opened through the CLI's own assembly (:mod:`bench.shipped`). Only the
    executor's context window is made small (a ``[models]`` override in the user's config) so
    that compaction comes within a short session."""
    extra = (
        '\n[models."deepseek-flash"]\ncontext_window = 14000\n'
        "\n[compaction]\nthreshold = 0.5\nkeep_recent_turns = 1\n"
    )
    async with shipped_session(workdir, config_extra=extra, summary=SUMMARY) as s:
        ws = s.workspace
        (ws / "pkg").mkdir(parents=True, exist_ok=True)
        (ws / "pkg" / "base.py").write_text(SOURCE)
        ex_script, pl_script = s.executor_script, s.planner_script
        for turn in (1, 2, 3):
            modules = range(1, steps_per_plan + 1)
            pl_script.push(
                Reply.call("ls", {"path": "pkg"}, reasoning="What is there?"),
                Reply.call("read_file", {"path": "pkg/base.py"}, reasoning="Read the base."),
                _plan(turn, modules, f"Add the turn-{turn} modules"),
            )
            replies: list[Reply] = []
            for module in modules:
                step = module
                if turn == 2 and module > 1:
                    step = module - 1  # the revised plan lists only what is left
                if turn == 2 and module == 2:
                    # the stall: the same failing command three times -> re-plan
                    replies += [Reply.call("bash", {"command": "make build"})] * 3
                    pl_script.push(
                        Reply.call("ls", {"path": "."}, reasoning="No Makefile?"),
                        _plan(turn, modules[1:], "Add the remaining modules without make"),
                    )
                replies += _do_step(turn, module, step)
            replies.append(Reply.text(f"Turn {turn} done: {steps_per_plan} modules added."))
            ex_script.push(*replies)
            await s.session.run_turn(
                f"plan first: add {steps_per_plan} word-count modules under pkg/ "
                f"(turn {turn}), verify each with test -s"
            )
        ex_script.push(
            Reply.call("grep", {"pattern": "def step_", "path": "pkg"}, reasoning="List."),
            Reply.call("bash", {"command": "ls pkg | wc -l"}, reasoning="Count."),
            Reply.text("All modules are in place."),
        )
        await s.session.run_turn("ok, list what exists")
        problems = s.check()
        if ex_script.queue or pl_script.queue:
            problems.append(
                f"unused replies: executor {len(ex_script.queue)}, planner {len(pl_script.queue)}"
            )
        ex, pl, sink = s.executor, s.planner, s.sink
        return SessionRun(
            executor_requests=list(ex.requests),
            planner_requests=list(pl.requests),
            usage_events=sink.of_type(UsageEvent),
            executor_steps=sum(1 for r in ex.requests if not is_summary(r)),
            planning_rounds=len(sink.of_type(PlanProduced)),
            replans=len(sink.of_type(ReplanTriggered)),
            compactions=sum(1 for e in sink.of_type(CompactionEvent) if e.accepted),
            problems=problems,
        )


def run_session_sync(workdir: Path, **kwargs: Any) -> SessionRun:
    return asyncio.run(run_session(workdir, **kwargs))


def dump(run: SessionRun) -> str:
    """A debugging aid: one line per request."""
    lines = []
    for role in ("executor", "planner"):
        for r in run.requests(role):
            last = r.messages[-1] if r.messages else {}
            lines.append(
                f"{role} #{r.index} {r.status} prompt={r.prompt_tokens} hit={r.cache_hit_tokens} "
                f"stored={r.stored_tokens_after_output} last={last.get('role')}:"
                f"{json.dumps(last.get('content', ''))[:50]}"
            )
    return "\n".join(lines)


_unused: Callable[..., object] = dump
