"""The plan contract: what the planner delivers through ``submit_plan``, and how a plan becomes
markdown (for the user and the executor) and todo items (for the executor's host state)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any

from reasonix.agent.todo import TodoItem
from reasonix.tools.registry import Tool, ToolContext, ToolResult
from reasonix.tools.state import StateKey

MAX_STEPS = 20


@dataclass(frozen=True)
class PlanStep:
    title: Annotated[str, "one imperative line"]
    files: Annotated[list[str], "files you verified"] = field(default_factory=list)
    acceptance: str = ""
    verify: Annotated[str, "shell command proving it"] = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "files": list(self.files),
            "acceptance": self.acceptance,
            "verify": self.verify,
        }


@dataclass(frozen=True)
class Plan:
    objective: str
    steps: tuple[PlanStep, ...]
    assumptions: tuple[str, ...] = ()
    risks: tuple[str, ...] = ()
    requires_approval: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "objective": self.objective,
            "assumptions": list(self.assumptions),
            "steps": [s.to_dict() for s in self.steps],
            "risks": list(self.risks),
            "requires_approval": self.requires_approval,
        }

    def to_markdown(self) -> str:
        """Compact markdown: objective, numbered steps with files/acceptance/verify, risks."""
        lines = [f"**Objective:** {self.objective}"]
        if self.assumptions:
            lines.append("**Assumptions:** " + "; ".join(self.assumptions))
        lines.append("**Steps:**")
        for i, step in enumerate(self.steps, start=1):
            lines.append(f"{i}. {step.title}")
            if step.files:
                lines.append(f"   - files: {', '.join(step.files)}")
            if step.acceptance:
                lines.append(f"   - done when: {step.acceptance}")
            if step.verify:
                lines.append(f"   - verify: `{step.verify}`")
        if self.risks:
            lines.append("**Risks:** " + "; ".join(self.risks))
        if self.requires_approval:
            lines.append("**Requires approval before execution.**")
        return "\n".join(lines)

    def todo_items(self) -> list[TodoItem]:
        """One todo per step (origin ``planner``), the first one in progress."""
        items = []
        for i, step in enumerate(self.steps[:MAX_STEPS], start=1):
            items.append(
                TodoItem(
                    content=step.title,
                    status="in_progress" if i == 1 else "pending",
                    level=0,
                    origin="planner",
                    id=str(i),
                    verify=step.verify,
                    acceptance=step.acceptance,
                )
            )
        return items


PLAN_KEY = StateKey("submitted_plan", Plan)


async def submit_plan(
    objective: str,
    steps: Annotated[list[PlanStep], "at most 20"],
    ctx: ToolContext,
    assumptions: list[str] | None = None,
    risks: list[str] | None = None,
    requires_approval: Annotated[
        bool, "risky (deletes data, wide changes): a human approves"
    ] = False,
) -> ToolResult:
    """Deliver the plan, once, after investigating."""
    problems = []
    if not objective.strip():
        problems.append("objective is empty")
    if not steps:
        problems.append("steps is empty: give at least one step")
    if len(steps) > MAX_STEPS:
        problems.append(f"{len(steps)} steps: merge them into at most {MAX_STEPS}")
    problems.extend(f"step {i} has an empty title" for i, s in enumerate(steps, 1) if not s.title)
    if problems:
        return ToolResult.error(
            "Plan rejected: " + "; ".join(problems) + ". Call submit_plan again."
        )
    plan = Plan(
        objective=objective.strip(),
        steps=tuple(steps),
        assumptions=tuple(assumptions or ()),
        risks=tuple(risks or ()),
        requires_approval=requires_approval,
    )
    PLAN_KEY.set(ctx.state, plan)
    return ToolResult(f"Plan accepted ({len(plan.steps)} steps). Stop here.")


def submit_plan_tool() -> Tool:
    # Read-only in the sense that matters to permissions: it touches no file, only host state.
    return Tool.from_function(
        submit_plan, read_only=True, category="plan", kind="think", subjects=("objective",)
    )
