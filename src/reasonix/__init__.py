"""reasonix: a DeepSeek-native coding agent with a cheap executor and an on-demand planner.

The public API, importable from here::

    from reasonix import Controller, Options, ToolRegistry, tool, OpenAICompatProvider

- the core: :class:`Controller` over two :class:`Agent` s (executor and planner), each with its
  own :class:`Session`; :class:`TurnResult` is what a turn produced;
- tools (:func:`tool`, :class:`ToolRegistry`), providers (:class:`Provider`,
  :class:`OpenAICompatProvider`), messages, events and sinks, and every error
  (:class:`ReasonixError` and below);
- the session façade every frontend uses (:class:`AgentSession`, :class:`Turn`,
  :class:`TurnOutcome`, the approval events);
- the test doubles (:class:`FakeDeepSeekServer`, :class:`ScriptedProvider`,
  :class:`FunctionProvider`, :class:`Reply`, :class:`Fault`).

Names are imported lazily so that ``import reasonix`` (and ``reasonix --version``) stays fast;
heavy dependencies load only when used. Type checkers read the ``TYPE_CHECKING`` imports below,
so every name has its real type. ``tests/test_public_api.py`` pins ``__all__``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from reasonix._version import __version__

if TYPE_CHECKING:
    from reasonix.agent.agent import Agent, AgentOptions, AgentResult, StopReason
    from reasonix.agent.session import Session
    from reasonix.agent.todo import TodoItem, TodoState
    from reasonix.app.approvals import (
        ApprovalAnswered,
        ApprovalChoice,
        ApprovalRequested,
        PlanApprovalRequested,
    )
    from reasonix.app.session import AgentSession
    from reasonix.app.turn import Turn, TurnOutcome
    from reasonix.config import Config, load_config
    from reasonix.control.controller import Controller, Options
    from reasonix.control.cost import RoleCost
    from reasonix.control.gate import GateOptions, Route
    from reasonix.control.orchestrator import (
        OrchestratorOptions,
        TurnOrchestrator,
        TurnResult,
        TurnStopReason,
    )
    from reasonix.control.plan import Plan, PlanStep
    from reasonix.errors import (
        APIStatusError,
        AuthenticationError,
        BadRequestError,
        ConfigError,
        InsufficientBalanceError,
        InvalidParametersError,
        MalformedChunkError,
        ProviderConnectionError,
        ProviderError,
        RateLimitError,
        ReasonixError,
        SandboxError,
        ServerError,
        SessionError,
        SessionStoreError,
        StreamCutError,
        StreamError,
        StreamIdleTimeout,
        ToolDefinitionError,
        TransientFinishError,
        UnknownModelError,
    )
    from reasonix.events import (
        CacheMissExplained,
        CollectingSink,
        CompactionEvent,
        ErrorEvent,
        Event,
        FanoutSink,
        GateDecided,
        JsonLinesSink,
        NoticeEvent,
        NullSink,
        PlanApproval,
        PlanFailed,
        PlanProduced,
        ReasoningDeltaEvent,
        ReplanTriggered,
        RetryEvent,
        Sink,
        StepCompleted,
        TextDeltaEvent,
        TodoChanged,
        ToolCallEvent,
        ToolResultEvent,
        TurnEnded,
        TurnStarted,
        UsageEvent,
        UsageSource,
    )
    from reasonix.messages import (
        AssistantMessage,
        Message,
        SystemMessage,
        ToolCall,
        ToolMessage,
        Usage,
        UserMessage,
    )
    from reasonix.providers.base import Provider
    from reasonix.providers.models import ModelInfo, Prices
    from reasonix.providers.openai_compat import OpenAICompatProvider
    from reasonix.providers.retry import RetryingProvider, RetryPolicy
    from reasonix.safety.permissions import ApprovalAnswer, ApprovalRequest, Approver
    from reasonix.store import SessionStore
    from reasonix.testing.fake_server import FakeDeepSeekServer
    from reasonix.testing.providers import FunctionProvider, ScriptedProvider
    from reasonix.testing.script import Fault, Reply
    from reasonix.tools.registry import Tool, ToolContext, ToolRegistry, ToolResult, tool
    from reasonix.tools.state import StateKey

_LAZY = {
    "APIStatusError": "reasonix.errors",
    "Agent": "reasonix.agent.agent",
    "AgentOptions": "reasonix.agent.agent",
    "AgentResult": "reasonix.agent.agent",
    "AgentSession": "reasonix.app.session",
    "ApprovalAnswer": "reasonix.safety.permissions",
    "ApprovalAnswered": "reasonix.app.approvals",
    "ApprovalChoice": "reasonix.app.approvals",
    "ApprovalRequest": "reasonix.safety.permissions",
    "ApprovalRequested": "reasonix.app.approvals",
    "Approver": "reasonix.safety.permissions",
    "AssistantMessage": "reasonix.messages",
    "AuthenticationError": "reasonix.errors",
    "BadRequestError": "reasonix.errors",
    "CacheMissExplained": "reasonix.events",
    "CollectingSink": "reasonix.events",
    "CompactionEvent": "reasonix.events",
    "Config": "reasonix.config",
    "ConfigError": "reasonix.errors",
    "Controller": "reasonix.control.controller",
    "ErrorEvent": "reasonix.events",
    "Event": "reasonix.events",
    "FakeDeepSeekServer": "reasonix.testing.fake_server",
    "FanoutSink": "reasonix.events",
    "Fault": "reasonix.testing.script",
    "FunctionProvider": "reasonix.testing.providers",
    "GateDecided": "reasonix.events",
    "GateOptions": "reasonix.control.gate",
    "InsufficientBalanceError": "reasonix.errors",
    "InvalidParametersError": "reasonix.errors",
    "JsonLinesSink": "reasonix.events",
    "MalformedChunkError": "reasonix.errors",
    "Message": "reasonix.messages",
    "ModelInfo": "reasonix.providers.models",
    "NoticeEvent": "reasonix.events",
    "NullSink": "reasonix.events",
    "OpenAICompatProvider": "reasonix.providers.openai_compat",
    "Options": "reasonix.control.controller",
    "OrchestratorOptions": "reasonix.control.orchestrator",
    "Plan": "reasonix.control.plan",
    "PlanApproval": "reasonix.events",
    "PlanApprovalRequested": "reasonix.app.approvals",
    "PlanFailed": "reasonix.events",
    "PlanProduced": "reasonix.events",
    "PlanStep": "reasonix.control.plan",
    "Prices": "reasonix.providers.models",
    "Provider": "reasonix.providers.base",
    "ProviderConnectionError": "reasonix.errors",
    "ProviderError": "reasonix.errors",
    "RateLimitError": "reasonix.errors",
    "ReasoningDeltaEvent": "reasonix.events",
    "ReasonixError": "reasonix.errors",
    "ReplanTriggered": "reasonix.events",
    "Reply": "reasonix.testing.script",
    "RetryEvent": "reasonix.events",
    "RetryPolicy": "reasonix.providers.retry",
    "RetryingProvider": "reasonix.providers.retry",
    "RoleCost": "reasonix.control.cost",
    "Route": "reasonix.control.gate",
    "SandboxError": "reasonix.errors",
    "ScriptedProvider": "reasonix.testing.providers",
    "ServerError": "reasonix.errors",
    "Session": "reasonix.agent.session",
    "SessionError": "reasonix.errors",
    "SessionStore": "reasonix.store",
    "SessionStoreError": "reasonix.errors",
    "Sink": "reasonix.events",
    "StateKey": "reasonix.tools.state",
    "StepCompleted": "reasonix.events",
    "StopReason": "reasonix.agent.agent",
    "StreamCutError": "reasonix.errors",
    "StreamError": "reasonix.errors",
    "StreamIdleTimeout": "reasonix.errors",
    "SystemMessage": "reasonix.messages",
    "TextDeltaEvent": "reasonix.events",
    "TodoChanged": "reasonix.events",
    "TodoItem": "reasonix.agent.todo",
    "TodoState": "reasonix.agent.todo",
    "Tool": "reasonix.tools.registry",
    "ToolCall": "reasonix.messages",
    "ToolCallEvent": "reasonix.events",
    "ToolContext": "reasonix.tools.registry",
    "ToolDefinitionError": "reasonix.errors",
    "ToolMessage": "reasonix.messages",
    "ToolRegistry": "reasonix.tools.registry",
    "ToolResult": "reasonix.tools.registry",
    "ToolResultEvent": "reasonix.events",
    "TransientFinishError": "reasonix.errors",
    "Turn": "reasonix.app.turn",
    "TurnEnded": "reasonix.events",
    "TurnOrchestrator": "reasonix.control.orchestrator",
    "TurnOutcome": "reasonix.app.turn",
    "TurnResult": "reasonix.control.orchestrator",
    "TurnStarted": "reasonix.events",
    "TurnStopReason": "reasonix.control.orchestrator",
    "UnknownModelError": "reasonix.errors",
    "Usage": "reasonix.messages",
    "UsageEvent": "reasonix.events",
    "UsageSource": "reasonix.events",
    "UserMessage": "reasonix.messages",
    "load_config": "reasonix.config",
    "tool": "reasonix.tools.registry",
}

__all__ = [
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
    "ReasoningDeltaEvent",
    "ReasonixError",
    "ReplanTriggered",
    "Reply",
    "RetryEvent",
    "RetryPolicy",
    "RetryingProvider",
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
    "StateKey",
    "StepCompleted",
    "StopReason",
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
    "TurnStopReason",
    "UnknownModelError",
    "Usage",
    "UsageEvent",
    "UsageSource",
    "UserMessage",
    "__version__",
    "load_config",
    "tool",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'reasonix' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted(__all__)
