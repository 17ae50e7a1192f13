"""``/rewind``: undo a user turn and every later one, files and conversations together.

A turn's mark (:class:`~reasonix.app.persistence.TurnMark`) says where both conversations stood
when it started and which checkpoint turn holds the files its tools changed. Rewinding restores
those files, cuts both conversations back (a rewrite the store mirrors), clears the todo list,
and records the shortened list of marks. A turn that a compaction folded into its summary can
no longer be cut out; the answer says so and changes nothing.
"""

from __future__ import annotations

from reasonix.app.persistence import SessionRecord
from reasonix.control import Controller
from reasonix.safety.checkpoints import CheckpointManager

__all__ = ["rewind_turn"]


def rewind_turn(
    controller: Controller,
    checkpoints: CheckpointManager,
    record: SessionRecord,
    turn: int | None = None,
) -> str:
    """Rewind to before ``turn`` (default: the last one); returns what happened, for the user."""
    marks = record.marks
    if not marks:
        return "Nothing to rewind: no turn has run in this session."
    target = marks[-1] if turn is None else next((m for m in marks if m.turn == turn), None)
    if target is None:
        return f"No turn {turn}; turns run so far: 1..{marks[-1].turn}."
    if not target.rewindable:
        which = "executor's" if target.executor_len < 0 else "planner's"
        kept = [m.turn for m in marks if m.rewindable]
        can = f" Turns that can be rewound: {', '.join(map(str, kept))}." if kept else ""
        return (
            f"Turn {target.turn} cannot be rewound: the {which} conversation was compacted "
            f"since, and that turn now lives only in its summary. Nothing was changed.{can}"
        )
    lines = [str(checkpoints.rewind(target.agent_turn + 1))]
    ex = controller.executor.session
    ex.rewrite(ex.snapshot()[: target.executor_len], reason="rewind")
    if controller.planner is not None:
        pl = controller.planner.session
        pl.rewrite(pl.snapshot()[: target.planner_len], reason="rewind")
    controller.executor.seed_todo_state([])
    record.cut_marks(target)
    lines.append(
        f"Rewound to before turn {target.turn} ({target.text[:60]!r}); the conversation "
        "continues from there."
    )
    return "\n".join(line for line in lines if line)
