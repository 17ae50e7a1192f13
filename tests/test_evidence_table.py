"""Evidence as a table: when the host accepts a claim that work is done. ``complete_step``
(:mod:`reasonix.control.todo_tools`) and ``update_goal``'s ``complete``
(:mod:`reasonix.control.goal`) over what the progress ledger (:mod:`reasonix.agent.progress`)
observed before and after the step or goal started, with and without a verification command,
with empty and real evidence; which step a key names; and the ledger's own answers (a command
that succeeded since a mark, a failure repeated at the end). Pure host state, no I/O.

The rules the tables encode:

- a step with a verification command is done only when that command (whitespace runs
  collapsed) ran successfully after the step started *and* after the step's last successful
  write (a repeated identical write counts as a write; a failed one does not);
- a step without one is done only when the host saw new work since the step started: a
  successful write, command, read or other call with an outcome not seen before. Todo
  bookkeeping (``todo_write``, a completion) is never work;
- empty evidence is refused, but only after the checks above (the model first hears what work
  is missing);
- steps are completed in order, by id or a case-insensitive prefix of their text;
- a goal is complete only with non-empty evidence, new work since the goal started, every todo
  step done, and every command the evidence quotes in backticks run successfully since the
  goal started and after its last write.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from reasonix.agent.progress import LEDGER_KEY, ProgressLedger
from reasonix.agent.todo import TODO_KEY, TodoItem, TodoState
from reasonix.control.goal import GOAL_KEY, GoalTracker, update_goal, update_goal_tool
from reasonix.control.todo_tools import (
    STEP_BASELINE,
    STEP_CALLBACK,
    TodoInput,
    complete_step,
    executor_plan_tools,
    todo_write,
)
from reasonix.safety.permissions import Mode, Rules, call_subject, decide
from reasonix.tools.registry import Effect, ToolContext

VERIFY = "pytest -q"


@dataclass(frozen=True)
class Seen:
    """One observation of the ledger and what the rules say it is."""

    effect: Effect
    is_error: bool = False
    work: bool = False  # successful and not bookkeeping (new work when not seen before)
    write: bool = False  # a successful write
    verify_ok: bool = False  # the verification command succeeded


EVENTS: dict[str, Seen] = {
    "write": Seen(Effect("write", "a.py", "w1"), work=True, write=True),
    "write-again": Seen(Effect("write", "a.py", "w1"), work=True, write=True),
    "write-other": Seen(Effect("write", "b.py", "w2"), work=True, write=True),
    "write-failed": Seen(Effect("write", "a.py", "w3", ok=False)),
    "write-error": Seen(Effect("write", "a.py", "w4"), is_error=True),
    "read": Seen(Effect("read", "c.py", "r1"), work=True),
    "read-again": Seen(Effect("read", "c.py", "r1"), work=True),
    "todo-write": Seen(Effect("todo_write", "list", "t1")),
    "completion": Seen(Effect("todo", "0:s0", "completed")),
    "call": Seen(Effect("call", "web_search", "c1"), work=True),
    "verify": Seen(Effect("command", VERIFY, "v1"), work=True, verify_ok=True),
    "verify-spaced": Seen(Effect("command", "  pytest    -q ", "v2"), work=True, verify_ok=True),
    "verify-failed": Seen(Effect("command", VERIFY, "v3", ok=False)),
    "verify-timeout": Seen(Effect("command", VERIFY, "v4", ok=False), is_error=True),
    "verify-narrower": Seen(Effect("command", f"{VERIFY} tests/x.py", "v5"), work=True),
    "other-command": Seen(Effect("command", "ruff check .", "o1"), work=True),
    # started in the background: work, but its exit code is not known
    "verify-job": Seen(Effect("job", VERIFY, "job:job-1"), work=True),
}


def _key(seen: Seen) -> tuple[str, str, str]:
    e = seen.effect
    return (e.kind, e.target, e.digest)


def new_work_after(before: list[str], after: list[str]) -> bool:
    """Whether ``after`` holds work whose outcome was not seen before (in ``before`` or
    earlier in ``after``)."""
    seen = {_key(EVENTS[n]) for n in before if EVENTS[n].effect.ok and not EVENTS[n].is_error}
    for name in after:
        event = EVENTS[name]
        if not event.effect.ok or event.is_error:
            continue
        if event.work and _key(event) not in seen:
            return True
        seen.add(_key(event))
    return False


def verified_after_last_write(after: list[str]) -> bool:
    """Whether the verification command succeeded in ``after`` with no write after it."""
    ok = False
    for name in after:
        event = EVENTS[name]
        if event.write:
            ok = False
        if event.verify_ok:
            ok = True
    return ok


def observe(ledger: ProgressLedger, names: list[str]) -> None:
    for name in names:
        event = EVENTS[name]
        ledger.observe(event.effect, is_error=event.is_error, output=f"output of {name}")


def context(items: list[TodoItem]) -> tuple[ToolContext, TodoState, ProgressLedger, list[Any]]:
    todo, ledger = TodoState(items), ProgressLedger()
    verdicts: list[tuple[str, bool, str]] = []
    ctx = ToolContext(workspace=Path("/nonexistent-ws"), call_id="c")
    TODO_KEY.set(ctx.state, todo)
    LEDGER_KEY.set(ctx.state, ledger)
    STEP_CALLBACK.set(ctx.state, lambda step, ok, why: verdicts.append((step, ok, why)))
    return ctx, todo, ledger, verdicts


def start_step(ctx: ToolContext, ledger: ProgressLedger) -> int:
    """The step starts now (what todo_write or the previous completion does)."""
    mark = ledger.mark()
    STEP_BASELINE.set(ctx.state, mark)
    return mark


BEFORE = [[], ["read"], ["write"], ["verify"], ["write", "verify"]]
AFTER = [
    [],
    ["todo-write"],
    ["completion", "todo-write"],
    ["read"],
    ["read-again"],
    ["write"],
    ["write-again"],
    ["write-failed"],
    ["write-error"],
    ["call"],
    ["verify"],
    ["verify-spaced"],
    ["verify-failed"],
    ["verify-timeout"],
    ["verify-narrower"],
    ["other-command"],
    ["verify", "write"],
    ["write", "verify"],
    ["write", "verify-spaced", "write-failed"],
    ["write", "verify", "write-error"],
    ["verify", "write-again"],
    ["write", "verify-failed"],
    ["write", "verify", "other-command"],
    ["write", "verify", "write-other", "verify-narrower"],
    ["verify-failed", "verify"],
    ["verify-job"],
    ["write", "verify-job"],
]
EVIDENCE = ["ran it, 3 passed", " \n "]
STEP_CASES = list(itertools.product(["", VERIFY], BEFORE))


def expected_step(verify: str, before: list[str], after: list[str], evidence: str) -> str:
    """ "" for accepted, else a fragment of the refusal."""
    if verify and not verified_after_last_write(after):
        return f"names the verification command `{VERIFY}`"
    if not verify and not new_work_after(before, after):
        return "the host observed no progress"
    if not evidence.strip():
        return "evidence is empty"
    return ""


@pytest.mark.parametrize(
    ("verify", "before"),
    STEP_CASES,
    ids=[f"{'verify' if v else 'plain'}-[{','.join(b)}]" for v, b in STEP_CASES],
)
async def test_complete_step_table(verify: str, before: list[str]) -> None:
    """Every observation sequence after the step started, with real and empty evidence (50
    rows per case)."""
    for after, evidence in itertools.product(AFTER, EVIDENCE):
        row = f"after={after} evidence={evidence!r}"
        items = [
            TodoItem("write the parser", "in_progress", origin="planner", id="1", verify=verify),
            TodoItem("document it", origin="planner", id="2"),
        ]
        ctx, todo, ledger, verdicts = context(items)
        observe(ledger, before)
        baseline = start_step(ctx, ledger)
        observe(ledger, after)
        result = await complete_step("1", evidence, ctx)
        want = expected_step(verify, before, after, evidence)
        if want:
            assert result.is_error and result.content.startswith("complete_step refused: "), row
            assert want in result.content, (row, result.content)
            assert [i.status for i in todo.items] == ["in_progress", "pending"], row
            assert STEP_BASELINE.get(ctx.state) == baseline, row  # the step did not restart
            why = result.content.removeprefix("complete_step refused: ")
            assert verdicts == [("1", False, why)], row
        else:
            assert not result.is_error, (row, result.content)
            done = "Step 1 completed. 1 remaining. Next: step 2: document it"
            assert result.content == done, row
            assert [i.status for i in todo.items] == ["completed", "in_progress"], row
            assert verdicts == [("1", True, "")], row
            # The next step starts now: what came before it is not its evidence.
            assert STEP_BASELINE.get(ctx.state) == ledger.mark(), row
            again = await complete_step("2", evidence, ctx)
            assert again.is_error and "observed no progress" in again.content, row
            # The completion is the call's only effect, and it is bookkeeping, not work.
            assert [e.kind for e in result.effects] == ["todo"], row


#: the key the model names, and what happens (a fragment of the refusal, or "" accepted)
KEYS: list[tuple[str, str]] = [
    ("2", ""),
    (" 2 ", ""),
    ("S2 bui", ""),  # a case-insensitive prefix of the text
    ("s2 build the lexer", ""),
    ("1", "step 1 is already completed"),
    ("s1", "step 1 is already completed"),
    ("s", "step 1 is already completed"),  # a prefix names the first item it fits
    ("3", "steps are completed in order; finish step 2 ('s2 build the lexer') first"),
    ("s3", "steps are completed in order; finish step 2"),
    ("9", "no step matches '9'"),
    ("", "no step matches ''"),
    ("lexer", "no step matches 'lexer'"),  # only a prefix, not a part
]


@pytest.mark.parametrize(("key", "want"), KEYS)
async def test_which_step_a_key_names(key: str, want: str) -> None:
    items = [
        TodoItem("s1 write the parser", "completed", id="1"),
        TodoItem("s2 build the lexer", "in_progress", id="2"),
        TodoItem("s3 wire them", id="3"),
    ]
    ctx, todo, ledger, _ = context(items)
    start_step(ctx, ledger)
    observe(ledger, ["write"])
    result = await complete_step(key, "wrote a.py", ctx)
    if want:
        assert result.is_error and want in result.content, result.content
    else:
        assert not result.is_error, result.content
        assert result.content.startswith("Step 2 completed. 1 remaining. Next: step 3")
        assert [i.status for i in todo.items] == ["completed", "completed", "in_progress"]


async def test_the_last_step_says_all_are_done() -> None:
    ctx, _, ledger, _ = context([TodoItem("only", "in_progress", id="1")])
    start_step(ctx, ledger)
    observe(ledger, ["write"])
    result = await complete_step("1", "wrote a.py", ctx)
    assert result.content == "Step 1 completed. 0 remaining. All steps are completed."


#: evidence, and the commands it quotes in backticks
GOAL_EVIDENCE: list[tuple[str, tuple[str, ...]]] = [
    ("", ()),
    ("  ", ()),
    ("it works", ()),
    (f"`{VERIFY}` passes", (VERIFY,)),
    (f"`{VERIFY}` and `ruff check .` pass", (VERIFY, "ruff check .")),
]
GOAL_TODO = ["none", "all-done", "one-open"]
GOAL_AFTER = [
    [],
    ["todo-write"],
    ["write"],
    ["read"],
    ["verify"],
    ["write", "verify"],
    ["verify", "write"],
    ["verify-failed"],
    ["write", "verify", "other-command"],
    ["write", "other-command", "verify"],
    ["other-command", "write", "verify"],
    ["write", "verify-spaced", "other-command"],
    ["write", "verify-job"],
]


def expected_goal(
    evidence: tuple[str, tuple[str, ...]], before: list[str], after: list[str], todo: str
) -> str:
    text, quoted = evidence
    if not text.strip():
        return "evidence is empty"
    if not new_work_after(before, after):
        return "the host observed no work toward the goal"
    if todo == "one-open":
        return "step 2 ('tests') of the todo list is not completed"
    last_write = max((i for i, n in enumerate(after) if EVENTS[n].write), default=-1)
    for command in quoted:
        if not any(_command(n) == command for n in after[last_write + 1 :]):
            return f"the host has not seen `{command}` succeed"
    return ""


def _command(name: str) -> str | None:
    """The command a successful command event ran (whitespace collapsed), else None."""
    event = EVENTS[name]
    if event.effect.kind != "command" or not event.effect.ok or event.is_error:
        return None
    return " ".join(event.effect.target.split())


@pytest.mark.parametrize("evidence", GOAL_EVIDENCE, ids=[e[0].strip() for e in GOAL_EVIDENCE])
async def test_goal_complete_table(evidence: tuple[str, tuple[str, ...]]) -> None:
    """Every observation sequence before and after the goal started, with each todo list
    (72 rows per piece of evidence)."""
    for before, after, todo in itertools.product([[], ["verify"]], GOAL_AFTER, GOAL_TODO):
        row = f"before={before} after={after} todo={todo}"
        items = {
            "none": [],
            "all-done": [
                TodoItem("code", "completed", id="1"),
                TodoItem("tests", "completed", id="2"),
            ],
            "one-open": [TodoItem("code", "completed", id="1"), TodoItem("tests", id="2")],
        }[todo]
        ctx, _, ledger, _ = context(items)
        tracker = GoalTracker()
        GOAL_KEY.set(ctx.state, tracker)
        observe(ledger, before)
        tracker.start("ship the parser", ledger.mark())
        observe(ledger, after)
        result = await update_goal("complete", "did it", ctx, evidence=evidence[0])
        want = expected_goal(evidence, before, after, todo)
        if want:
            prefix = "update_goal complete refused: "
            assert result.is_error and result.content.startswith(prefix), row
            assert want in result.content, (row, result.content)
            assert tracker.report is None, row
            assert tracker.refusals == [result.content.removeprefix(prefix)], row
        else:
            assert not result.is_error, (row, result.content)
            assert tracker.report is not None and tracker.report.status == "complete", row
            assert tracker.report.evidence == evidence[0].strip(), row
            assert tracker.refusals == [], row


#: (command, ok, is_error) runs, the mark after the first ``at`` of them, the command asked
#: about, and whether it succeeded since the mark
SUCCEEDED: list[tuple[list[tuple[str, bool, bool]], int, str, bool]] = [
    ([], 0, VERIFY, False),
    ([(VERIFY, True, False)], 0, VERIFY, True),
    ([(VERIFY, True, False)], 1, VERIFY, False),  # ran before the mark
    ([(VERIFY, False, False)], 0, VERIFY, False),
    ([(VERIFY, False, True)], 0, VERIFY, False),
    ([(VERIFY, True, False), (VERIFY, False, False)], 1, VERIFY, False),
    ([(VERIFY, False, False), (VERIFY, True, False)], 1, VERIFY, True),
    ([("pytest\t -q", True, False)], 0, VERIFY, True),
    ([(VERIFY, True, False)], 0, " pytest  -q\n", True),
    ([(VERIFY, True, False)], 0, "pytest -qq", False),
    ([("pytest -q -x", True, False)], 0, VERIFY, False),
    ([("PYTEST -q", True, False)], 0, VERIFY, False),  # commands are case-sensitive
]


@pytest.mark.parametrize(("runs", "at", "command", "ok"), SUCCEEDED)
def test_command_succeeded_table(
    runs: list[tuple[str, bool, bool]], at: int, command: str, ok: bool
) -> None:
    ledger = ProgressLedger()
    mark = 0
    for i, (ran, success, is_error) in enumerate(runs):
        if i == at:
            mark = ledger.mark()
        ledger.observe(Effect("command", ran, f"d{i}", ok=success), is_error=is_error)
    if at >= len(runs):
        mark = ledger.mark()
    assert ledger.command_succeeded(command, since=mark) is ok


#: the recent (key, digest, ok) outcomes, how many in a row, and what failed repeatedly
REPEATS: list[tuple[list[tuple[str, str, bool]], int, str | None]] = [
    ([], 3, None),
    ([("a", "d", False)] * 2, 3, None),
    ([("a", "d", False)] * 3, 3, "a"),
    ([("a", "d", False)] * 2, 2, "a"),
    ([("a", "d", True)] * 3, 3, None),  # the same success is no failure
    ([("a", "d", False), ("a", "e", False), ("a", "d", False)], 3, None),  # output changed
    ([("a", "d", False), ("b", "d", False), ("a", "d", False)], 3, None),
    ([("b", "d", False)] + [("a", "d", False)] * 3, 3, "a"),  # only the end counts
    ([("a", "d", False)] * 3 + [("b", "d", True)], 3, None),
    ([("a", "d", False)] * 20, 3, "a"),  # past the record's 16 entries
    ([("a", "d", False)] * 20, 16, "a"),
    ([("a", "d", False)] * 20, 17, None),  # the record keeps the last 16 outcomes only
]


@pytest.mark.parametrize(("recent", "times", "repeated"), REPEATS)
def test_repeated_failure_table(
    recent: list[tuple[str, str, bool]], times: int, repeated: str | None
) -> None:
    ledger = ProgressLedger()
    for key, digest, ok in recent:
        ledger.record_call(key, digest, ok)
    assert ledger.repeated_failure(times) == repeated


def test_new_progress_is_counted_once_and_changes_the_signature() -> None:
    """What the stall watch reads: each new outcome changes the signature once; a repeat, a
    failure or an error leaves it alone; bookkeeping is progress but not work."""
    ledger = ProgressLedger()
    signatures = [ledger.signature()]
    answers = []
    for name in ["write", "write-again", "write-failed", "write-error", "completion", "read"]:
        event = EVENTS[name]
        answers.append(ledger.observe(event.effect, is_error=event.is_error))
        signatures.append(ledger.signature())
    assert answers == [True, False, False, False, True, True]
    assert [a != b for a, b in itertools.pairwise(signatures)] == answers
    assert ledger.count == 3
    assert ledger.work_seq == 6 and ledger.write_seq == 2 and ledger.seq == 6


def test_a_todo_item_reaching_completed_is_progress_once() -> None:
    """The stall watch's other input: each item that reaches ``completed`` is progress, once
    (seeing the list again adds nothing), and it is bookkeeping, never work."""
    ledger = ProgressLedger()
    before = ledger.signature()
    items = [TodoItem("a", "completed", id="1"), TodoItem("b", "in_progress", id="2")]
    ledger.observe_todo(items)
    assert (ledger.count, ledger.work_seq) == (1, 0)
    after_one = ledger.signature()
    assert after_one != before
    ledger.observe_todo(items)
    assert (ledger.count, ledger.signature()) == (1, after_one)
    ledger.observe_todo([items[0], TodoItem("b", "completed", id="2")])
    assert ledger.count == 2 and ledger.signature() != after_one
    assert ledger.work_seq == 0  # no work, however many completions


def test_the_defaults_look_at_the_whole_record() -> None:
    """Without a mark, a success anywhere in the record counts; without a count, three
    identical failures in a row are a repetition."""
    ledger = ProgressLedger()
    ledger.observe(Effect("command", VERIFY, "d1"))
    assert ledger.command_succeeded(VERIFY)
    for _ in range(2):
        ledger.record_call("bash:make", "d", False)
    assert ledger.repeated_failure() is None
    ledger.record_call("bash:make", "d", False)
    assert ledger.repeated_failure() == "bash:make"


#: the recorded (key, digest, ok) calls, the key asked about, and its latest outcome
LAST: list[tuple[list[tuple[str, str, bool]], str, tuple[str, str, bool] | None]] = [
    ([], "a", None),
    ([("a", "d1", True)], "a", ("a", "d1", True)),
    ([("a", "d1", True)], "b", None),
    ([("a", "d1", True), ("a", "d2", False)], "a", ("a", "d2", False)),
    ([("a", "d1", True), ("b", "d2", False)], "a", ("a", "d1", True)),
    ([("b", "a", False)], "a", None),  # a digest equal to the key is not the key
]


@pytest.mark.parametrize(("calls", "key", "last"), LAST)
def test_last_outcome_table(
    calls: list[tuple[str, str, bool]], key: str, last: tuple[str, str, bool] | None
) -> None:
    ledger = ProgressLedger()
    for call in calls:
        ledger.record_call(*call)
    assert ledger.last_outcome(key) == last


def test_a_command_run_keeps_the_tail_of_its_output() -> None:
    """What a failure brief quotes: the last 400 characters of the command's output."""
    ledger = ProgressLedger()
    output = "".join(f"line {i}\n" for i in range(200))
    ledger.observe(Effect("command", "make", "d", ok=False), output=output)
    (run,) = ledger.commands
    assert (run.command, run.ok, run.output_tail) == ("make", False, output[-400:])


#: the list before, the items todo_write is given (content, status, level or None for the
#: default), and either the refusal's start or the list after (content, status, level, origin,
#: verify), numbered from 1
WRITES: list[
    tuple[list[TodoItem], list[tuple[str, str, int | None]], str | list[tuple[Any, ...]]]
] = [
    (
        [],
        [("a", "in_progress", None), ("b", "pending", None)],
        [("a", "in_progress", 0, "executor", ""), ("b", "pending", 0, "executor", "")],
    ),
    (
        [TodoItem("a", "completed", origin="planner", id="1", verify="make")],
        [("a", "completed", None), ("b", "in_progress", 1)],
        [("a", "completed", 0, "planner", "make"), ("b", "in_progress", 1, "executor", "")],
    ),
    (
        [TodoItem("a", "in_progress", origin="planner", id="1")],
        [("a", "completed", None)],
        "Item 1 ('a') is marked completed: use complete_step",
    ),
    (
        [],
        [("x", "pending", None), ("y", "completed", None)],
        "Item 2 ('y') is marked completed: use complete_step",
    ),
    (
        [],
        [("deep", "pending", 5), ("shallow", "pending", -3)],
        [("deep", "pending", 1, "executor", ""), ("shallow", "pending", 0, "executor", "")],
    ),
    (
        [
            TodoItem("a", "pending", origin="planner", id="1", verify="make a"),
            TodoItem("b", "pending", origin="user", id="2"),
            TodoItem("c", "in_progress", origin="planner", id="3"),
        ],
        [("c", "in_progress", None), ("a", "pending", None)],
        [("c", "in_progress", 0, "planner", ""), ("a", "pending", 0, "planner", "make a")],
    ),
]


@pytest.mark.parametrize(("old", "given", "want"), WRITES)
async def test_todo_write_table(
    old: list[TodoItem],
    given: list[tuple[str, str, int | None]],
    want: str | list[tuple[Any, ...]],
) -> None:
    """todo_write plans: it keeps what the list knew of an item (origin, verification), clamps
    levels, renumbers, and restarts the step's evidence; a completion goes through
    complete_step, so marking an item completed that was not is refused and changes nothing."""
    ctx, todo, ledger, _ = context(old)
    observe(ledger, ["write"])
    baseline = start_step(ctx, ledger)
    observe(ledger, ["read"])
    items = [
        TodoInput(content, status, level) if level is not None else TodoInput(content, status)  # type: ignore[arg-type]
        for content, status, level in given
    ]
    result = await todo_write(items, ctx)
    if isinstance(want, str):
        assert result.is_error and result.content.startswith(want), result.content
        assert todo.items == tuple(old)
        assert STEP_BASELINE.get(ctx.state) == baseline
        return
    assert not result.is_error, result.content
    assert [(i.content, i.status, i.level, i.origin, i.verify) for i in todo.items] == want
    assert [i.id for i in todo.items] == [str(n) for n in range(1, len(want) + 1)]
    assert result.content == "Todo list updated:\n" + todo.render()
    assert STEP_BASELINE.get(ctx.state) == ledger.mark() > baseline
    assert [e.kind for e in result.effects] == ["todo_write"]


#: status, summary, next_action, whether a goal is active, and the reply's start
GOAL_REPORTS: list[tuple[str, str, str, bool, str]] = [
    ("continue", "read the code", "write the parser", True, "Recorded. End this turn now"),
    ("continue", "read the code", "  ", True, "With status continue, say the next action"),
    ("blocked", "no access to the db", "", True, "Recorded: the goal stops as blocked"),
    ("continue", "  ", "write it", True, "update_goal needs a summary"),
    ("continue", "read the code", "write the parser", False, "No goal is active"),
]


@pytest.mark.parametrize(("status", "summary", "action", "active", "reply"), GOAL_REPORTS)
async def test_goal_reports_that_need_no_evidence(
    status: str, summary: str, action: str, active: bool, reply: str
) -> None:
    """``continue`` and ``blocked`` are recorded without evidence (nothing is claimed done);
    each still needs its words, and none is taken without an active goal."""
    ctx, _, ledger, _ = context([])
    tracker = GoalTracker()
    GOAL_KEY.set(ctx.state, tracker)
    if active:
        tracker.start("ship the parser", ledger.mark())
    result = await update_goal(status, summary, ctx, next_action=action)  # type: ignore[arg-type]
    assert result.content.startswith(reply), result.content
    recorded = reply.startswith("Recorded")
    assert result.is_error is not recorded
    if recorded:
        assert tracker.report is not None
        assert (tracker.report.status, tracker.report.next_action) == (status, action.strip())
    else:
        assert tracker.report is None


@pytest.mark.parametrize("mode", list(Mode))
def test_the_sign_off_tools_are_host_state_only(mode: Mode, tmp_path: Path) -> None:
    """todo_write, complete_step and update_goal change host state, never the workspace: no
    mode asks about them or refuses them (plan mode included)."""
    tools = [*executor_plan_tools(), update_goal_tool()]
    args: dict[str, dict[str, Any]] = {
        "todo_write": {"items": []},
        "complete_step": {"step": "1", "evidence": "ran it"},
        "update_goal": {"status": "continue", "summary": "s", "next_action": "n"},
    }
    for tool in tools:
        subject = call_subject(tool, args[tool.name], tmp_path)
        assert decide(tool, subject, mode, Rules()).outcome == "allow", tool.name
