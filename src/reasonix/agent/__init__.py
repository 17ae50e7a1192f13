"""The single-agent layer: Agent loop, Session, TodoState, progress ledger, prefix shapes."""

from reasonix.agent.agent import Agent, AgentOptions, AgentResult, StepInfo
from reasonix.agent.session import Session
from reasonix.agent.todo import TodoItem, TodoState

__all__ = ["Agent", "AgentOptions", "AgentResult", "Session", "StepInfo", "TodoItem", "TodoState"]
