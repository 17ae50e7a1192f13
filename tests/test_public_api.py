"""The public API of ``import reasonix``: the exported names are pinned, every one resolves
lazily to what the type checker sees, and a strict user program type-checks with real types."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import reasonix

PROGRAM = Path(__file__).parent / "typing" / "strict_user_program.py"

# Changing this list changes the public API: do it on purpose, and say so in the changelog.
EXPORTED = [
    "APIStatusError",
    "Agent",
    "AgentOptions",
    "AgentResult",
    "AgentSession",
    "ApprovalAnswer",
    "ApprovalAnswered",
    "ApprovalChoice",
    "ApprovalRequest",
    "ApprovalRequested",
    "Approver",
    "AssistantMessage",
    "AuthenticationError",
    "BadRequestError",
    "CacheMissExplained",
    "CollectingSink",
    "CompactionEvent",
    "Config",
    "ConfigError",
    "Controller",
    "ErrorEvent",
    "Event",
    "FakeDeepSeekServer",
    "FanoutSink",
    "Fault",
    "FunctionProvider",
    "GateDecided",
    "GateOptions",
    "InsufficientBalanceError",
    "InvalidParametersError",
    "JsonLinesSink",
    "MalformedChunkError",
    "Message",
    "ModelInfo",
    "NoticeEvent",
    "NullSink",
    "OpenAICompatProvider",
    "Options",
    "OrchestratorOptions",
    "Plan",
    "PlanApproval",
    "PlanApprovalRequested",
    "PlanFailed",
    "PlanProduced",
    "PlanStep",
    "Prices",
    "Provider",
    "ProviderConnectionError",
    "ProviderError",
    "RateLimitError",
    "ReasonixError",
    "ReasoningDeltaEvent",
    "ReplanTriggered",
    "Reply",
    "RetryEvent",
    "RoleCost",
    "Route",
    "SandboxError",
    "ScriptedProvider",
    "ServerError",
    "Session",
    "SessionError",
    "SessionStore",
    "SessionStoreError",
    "Sink",
    "StepCompleted",
    "StreamCutError",
    "StreamError",
    "StreamIdleTimeout",
    "SystemMessage",
    "TextDeltaEvent",
    "TodoChanged",
    "TodoItem",
    "TodoState",
    "Tool",
    "ToolCall",
    "ToolCallEvent",
    "ToolContext",
    "ToolDefinitionError",
    "ToolMessage",
    "ToolRegistry",
    "ToolResult",
    "ToolResultEvent",
    "TransientFinishError",
    "Turn",
    "TurnEnded",
    "TurnOrchestrator",
    "TurnOutcome",
    "TurnResult",
    "TurnStarted",
    "UnknownModelError",
    "Usage",
    "UsageEvent",
    "UsageSource",
    "UserMessage",
    "StopReason",
    "TurnStopReason",
    "StateKey",
    "RetryPolicy",
    "RetryingProvider",
    "__version__",
    "load_config",
    "tool",
]


def test_the_exported_names_are_pinned() -> None:
    assert sorted(reasonix.__all__) == sorted(EXPORTED)
    assert len(set(reasonix.__all__)) == len(reasonix.__all__)


def test_every_exported_name_resolves() -> None:
    for name in reasonix.__all__:
        assert getattr(reasonix, name) is not None, name
    assert set(reasonix.__all__) <= set(dir(reasonix))


def test_type_checkers_see_the_same_names_as_the_lazy_imports() -> None:
    """The ``if TYPE_CHECKING:`` imports in reasonix/__init__.py must name exactly the modules
    the lazy ``__getattr__`` loads, or a type checker and the interpreter disagree."""
    tree = ast.parse(Path(reasonix.__file__).read_text(encoding="utf-8"))
    seen: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for stmt in node.body:
                assert isinstance(stmt, ast.ImportFrom) and stmt.module is not None
                for alias in stmt.names:
                    seen[alias.asname or alias.name] = stmt.module
    lazy = dict(reasonix._LAZY)
    assert seen == lazy
    for name, module in lazy.items():
        real = getattr(reasonix, name)
        if isinstance(real, type) or callable(real):
            assert getattr(sys.modules[module], name) is real


@pytest.mark.slow
def test_a_strict_user_program_type_checks_with_real_types(tmp_path: Path) -> None:
    env = {**os.environ, "MYPY_CACHE_DIR": str(tmp_path / "mypy-cache")}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-error-summary",
            "--config-file",
            os.devnull,
            "--python-version",
            "3.11",
            str(PROGRAM),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=600,
    )
    lines = proc.stdout.splitlines()
    errors = [line for line in lines if ": error:" in line]
    assert errors == [], proc.stdout
    assert proc.returncode == 0, proc.stdout + proc.stderr
    revealed = {
        int(m.group(1)): m.group(2)
        for line in lines
        if (m := re.search(r":(\d+): note: Revealed type is \"(.*)\"$", line))
    }
    source = PROGRAM.read_text(encoding="utf-8").splitlines()
    calls = [i + 1 for i, text in enumerate(source) if "reveal_type(" in text]
    assert sorted(revealed) == calls, proc.stdout
    for line, shown in revealed.items():
        assert "Any" not in shown, f"line {line}: {source[line - 1].strip()} -> {shown}"

    def at(snippet: str) -> str:
        return revealed[next(i for i in calls if snippet in source[i - 1])]

    # executor only: no planner, and the type says so
    assert at("reveal_type(ctrl)") == "reasonix.control.controller.Controller[None]"
    assert at("reveal_type(alone.planner)") == "None"
    # DESIGN.md's seed example (with a planner provider): ctrl.planner.session, no None check
    assert at("reveal_type(ctrl.planner)") == "reasonix.agent.agent.Agent"
    assert at("reveal_type(shout)") == "reasonix.tools.registry.Tool"
    assert at("reveal_type(count)") == "reasonix.tools.registry.Tool"
    assert at("reveal_type(result)") == "reasonix.control.orchestrator.TurnResult"
    reasons = set(re.findall(r"Literal\['(\w+)'\]", at("reveal_type(result.stop_reason)")))
    assert {"done", "step_limit", "error", "stalled", "plan_declined", "budget"} <= reasons
    assert at("reveal_type(exc)") == "reasonix.errors.ReasonixError"
    assert at("reveal_type(session)") == "reasonix.app.session.AgentSession"
    assert at("reveal_type(turn)") == "reasonix.app.turn.Turn"
    assert at("reveal_type(outcome)") == "reasonix.app.turn.TurnOutcome"
    assert at("reveal_type(outcome.result)") == "reasonix.control.orchestrator.TurnResult"
    assert at("reveal_type(event)") == "reasonix.events.Event"
