"""``/rewind`` and ``/undo``: undo a user turn (and every later one) or the last steps, files
and conversations together.

A turn's mark (:class:`~reasonix.app.persistence.TurnMark`) says where both conversations stood
when it started and which executor turn its steps' snapshots belong to. Rewinding restores the
files from the snapshot before that turn's first step, cuts both conversations back (a rewrite
the store mirrors), clears the todo list, and records the shortened list of marks. Undoing steps
restores the snapshot before the first undone step and cuts the executor's conversation before
the model step that made it, closing it with a note so the model knows. What a compaction
folded into its summary can no longer be cut out; the answer says so and changes nothing.
After either, auto mode's reviewer reuses none of the verdicts it gave before the cut.

The session's background jobs write outside its steps: a rewind first stops the jobs the
rewound turns started (nothing of theirs writes after it), and a file that changed while any
job ran is left alone and named with the job (it may be the job's work or the user's), with
``/rewind --force PATH`` to put it back.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from reasonix.app.persistence import SessionRecord, TurnMark
from reasonix.control import Controller
from reasonix.messages import AssistantMessage
from reasonix.safety.checkpoints import Busy, CheckpointManager
from reasonix.tools.builtin.jobs import JobInfo, JobTable

__all__ = ["UNDONE_STEP", "job_windows", "rewind_turn", "undo_steps"]

#: What the executor's conversation says in place of the steps the user undid.
UNDONE_STEP = (
    "[The user undid my next step(s): the files are back as they were before them, and what I "
    "did there did not happen.]"
)


def rewind_turn(
    controller: Controller,
    checkpoints: CheckpointManager,
    record: SessionRecord,
    turn: int | None = None,
    jobs: JobTable | None = None,
) -> str:
    """Rewind to before ``turn`` (default: the last one); returns what happened, for the user.
    The running ``jobs`` those turns started are stopped first."""
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
    label = f"before turn {target.turn}"
    lines, busy = _stop_jobs(jobs, marks, lambda job: job.turn > target.agent_turn)
    lines.append(str(checkpoints.rewind(target.agent_turn + 1, label=label, busy=busy)))
    ex = controller.executor.session
    ex.rewrite(ex.snapshot()[: target.executor_len], reason="rewind")
    if controller.planner is not None:
        pl = controller.planner.session
        pl.rewrite(pl.snapshot()[: target.planner_len], reason="rewind")
    controller.executor.seed_todo_state([])
    record.cut_marks(target)
    _reviewer_rewound(controller)
    lines.append(
        f"Rewound to before turn {target.turn} ({target.text[:60]!r}); the conversation "
        "continues from there."
    )
    return "\n".join(line for line in lines if line)


def _stop_jobs(
    jobs: JobTable | None, marks: Sequence[TurnMark], undone: Callable[[JobInfo], bool]
) -> tuple[list[str], list[Busy]]:
    """Stop the running jobs that what is undone started (``undone``), first; returns the lines
    saying so and when every job of the session ran (for the rewind's naming)."""
    if jobs is None:
        return [], []
    ours = [j.id for j in jobs.running() if undone(j)]
    lines = [
        f"Stopped {info.id} (started in turn {_user_turn(marks, info)}) first."
        for info in jobs.stop_now(ours)
    ]
    return lines, job_windows(jobs.snapshot(), marks)


def job_windows(jobs: Sequence[JobInfo], marks: Sequence[TurnMark]) -> list[Busy]:
    """When each background job of the session ran, named for the user."""
    return [
        Busy(f"{j.id} (started in turn {_user_turn(marks, j)})", j.started_at, j.ended_at)
        for j in jobs
    ]


def _user_turn(marks: Sequence[TurnMark], job: JobInfo) -> int:
    """The user turn in which the executor turn ``job.turn`` ran (0: before any mark)."""
    return max((m.turn for m in marks if m.agent_turn < job.turn), default=0)


def undo_steps(
    controller: Controller,
    checkpoints: CheckpointManager,
    record: SessionRecord,
    steps: int = 1,
    jobs: JobTable | None = None,
) -> str:
    """Undo the last ``steps`` steps that may have changed files; returns what happened. The
    running ``jobs`` those steps started are stopped first."""
    target = checkpoints.restore_point(steps)
    if target is None:
        return "Nothing to undo: no step of this session has changed files."
    ex = controller.executor.session
    messages = ex.snapshot()
    cut = next(
        (
            i
            for i, m in enumerate(messages)
            if isinstance(m, AssistantMessage)
            and any(call.id == target.call_id for call in m.tool_calls)
        ),
        None,
    )
    if cut is None:
        return (
            f"Step {target.seq} ({target.describe()}) cannot be undone here: the conversation "
            "that made it was compacted since. /rewind TURN rewinds a whole turn. Nothing was "
            "changed."
        )
    lines, busy = _stop_jobs(jobs, record.marks, lambda job: job.started_at >= target.time)
    result = checkpoints.undo(steps, busy=busy)
    dropped = [m for m in record.marks if m.executor_len > cut]
    ex.rewrite((*messages[:cut], AssistantMessage(content=UNDONE_STEP)), reason="rewind")
    if dropped:
        if controller.planner is not None and dropped[0].planner_len >= 0:
            pl = controller.planner.session
            pl.rewrite(pl.snapshot()[: dropped[0].planner_len], reason="rewind")
        record.cut_marks(dropped[0])
    _reviewer_rewound(controller)
    return "\n".join(
        [
            *lines,
            f"{result}\nThe conversation continues from before that step; the model is told it "
            "was undone.",
        ]
    )


def _reviewer_rewound(controller: Controller) -> None:
    """Auto mode's reviewer reuses no verdict from before the cut (see
    :meth:`~reasonix.control.review.ReviewerRole.rewound`)."""
    if controller.reviewer is not None:
        controller.reviewer.rewound(len(controller.executor.session))
