"""The dual-model layer: Controller, TurnOrchestrator, planner gate, plan contract."""

from reasonix.control.controller import Controller, Options
from reasonix.control.gate import GateDecision, GateOptions, Route
from reasonix.control.orchestrator import OrchestratorOptions, TurnOrchestrator, TurnResult
from reasonix.control.plan import Plan, PlanStep

__all__ = [
    "Controller",
    "GateDecision",
    "GateOptions",
    "Options",
    "OrchestratorOptions",
    "Plan",
    "PlanStep",
    "Route",
    "TurnOrchestrator",
    "TurnResult",
]
