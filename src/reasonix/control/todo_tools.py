"""The executor's plan tools: ``todo_write`` (its own list edits) and ``complete_step`` (a
sign-off the host accepts only with evidence it observed itself)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Annotated, Literal

from reasonix.agent.progress import LEDGER_KEY, ProgressLedger
from reasonix.agent.todo import TODO_KEY, TodoItem, TodoState
from reasonix.tools.registry import Effect, Tool, ToolContext, ToolResult
from reasonix.tools.state import StateKey

#: Told of each ``complete_step`` verdict: ``(step, accepted, reason)``.
StepCallback = Callable[[str, bool, str], None]

#: The ledger mark when the current step started (the evidence baseline).
STEP_BASELINE = StateKey("step_baseline", int)
STEP_CALLBACK = StateKey[StepCallback]("step_callback")


@dataclass(frozen=True)
class TodoInput:
    content: str
    status: Literal["pending", "in_progress", "completed"] = "pending"
    level: Annotated[int, "0 for a step, 1 for a sub-step"] = 0


def _state(ctx: ToolContext) -> tuple[TodoState, ProgressLedger]:
    todo = TODO_KEY.get(ctx.state)
    ledger = LEDGER_KEY.get(ctx.state)
    if todo is None or ledger is None:
        raise RuntimeError("todo tools need the agent's todo state and ledger in ctx.state")
    return todo, ledger


async def todo_write(items: list[TodoInput], ctx: ToolContext) -> ToolResult:
    """Replace the todo list. Keep planner steps you still intend to do; mark one in_progress."""
    todo, ledger = _state(ctx)
    by_content = {i.content: i for i in todo.items}
    new_items = []
    for n, given in enumerate(items, start=1):
        old = by_content.get(given.content)
        if given.status == "completed" and (old is None or old.status != "completed"):
            # Completions need evidence: they go through complete_step.
            return ToolResult.error(
                f"Item {n} ({given.content!r}) is marked completed: use complete_step with "
                "evidence to finish a step; todo_write only plans."
            )
        origin = old.origin if old else "executor"
        base = old or TodoItem(given.content, origin="executor")
        new_items.append(
            replace(base, status=given.status, level=min(max(given.level, 0), 1), origin=origin)
        )
    todo.replace(replace(item, id="") for item in new_items)
    STEP_BASELINE.set(ctx.state, ledger.mark())
    return ToolResult(
        "Todo list updated:\n" + todo.render(),
        effects=(Effect("todo_write", "list", str(hash(todo.render()))),),
    )


async def complete_step(
    step: Annotated[str, "number or title"],
    evidence: Annotated[str, "the command run and its result, or the file edited"],
    ctx: ToolContext,
) -> ToolResult:
    """Mark a todo step done. The host checks the evidence against what it observed."""
    todo, ledger = _state(ctx)
    callback = STEP_CALLBACK.get(ctx.state)
    item = todo.find(step)

    def refuse(why: str) -> ToolResult:
        if callback is not None:
            callback(step, False, why)
        return ToolResult.error(f"complete_step refused: {why}")

    if item is None:
        return refuse(f"no step matches {step!r}. Current list:\n{todo.render()}")
    if item.status == "completed":
        return refuse(f"step {item.id} is already completed.")
    first_open = next((i for i in todo.items if i.status != "completed"), None)
    if first_open is not None and first_open.id != item.id:
        return refuse(
            f"steps are completed in order; finish step {first_open.id} "
            f"({first_open.content!r}) first, or change the list with todo_write."
        )
    baseline = STEP_BASELINE.get(ctx.state) or 0
    if item.verify:
        # It must have passed during this step and after the step's last write: a run from an
        # earlier step, or one made before the change, proves nothing about this change.
        if not ledger.command_succeeded(item.verify, since=max(baseline, ledger.write_seq)):
            return refuse(
                f"step {item.id} names the verification command `{item.verify}`, and the host "
                "has not seen it run successfully since the step started and after its last "
                "edit. Run it (with bash) and call complete_step again."
            )
    else:
        # Todo bookkeeping (todo_write, an earlier complete_step) is not work on this step.
        if ledger.work_seq <= baseline:
            return refuse(
                "the host observed no progress (no successful write, command or new read) since "
                "this step started. Do the work first, then sign it off."
            )
    if not evidence.strip():
        return refuse("evidence is empty: say what you ran or changed.")
    todo.set_status(item.id, "completed")
    nxt = next((i for i in todo.items if i.status == "pending"), None)
    if nxt is not None:
        todo.set_status(nxt.id, "in_progress")
    STEP_BASELINE.set(ctx.state, ledger.mark())
    if callback is not None:
        callback(step, True, "")
    remaining = sum(1 for i in todo.items if i.status != "completed")
    tail = f"Next: step {nxt.id}: {nxt.content}" if nxt else "All steps are completed."
    # The completion itself as the call's effect (already recorded as todo progress), so the
    # registry does not add a generic "call" effect that would count as work for the next step.
    done = Effect("todo", f"{item.id}:{item.content}", "completed")
    return ToolResult(f"Step {item.id} completed. {remaining} remaining. {tail}", effects=(done,))


def executor_plan_tools() -> list[Tool]:
    # Marked read-only for permissions: they change host state, never the workspace.
    return [
        Tool.from_function(todo_write, read_only=True, category="todo", kind="think"),
        Tool.from_function(
            complete_step, read_only=True, category="todo", kind="think", subjects=("step",)
        ),
    ]
