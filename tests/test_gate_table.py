"""The planner gate as a table: :func:`reasonix.control.gate.decide` over every combination of
its inputs (planner available, ``plan_only``, a revision, the ``/plan`` flag, the gate mode,
plan approval, and requests of each kind), with the route and the reason code each gets; the
multi-step score over requests on both sides of each of its thresholds; and what counts as a
short follow-up. Pure functions, no I/O: thousands of rows in about a second.

The precedence the table encodes (the first that applies decides):

=====================================  ==================  ============================
input                                  route               reason
=====================================  ==================  ============================
no planner configured                  executor only       ``no_planner``
``plan_only``                          plan only           ``explicit_plan_only``
a revision of a declined plan          plan for approval   ``revised_plan``
``plan=True`` (``/plan``)              planned (*)         ``explicit_flag``
``plan=False``                         executor only       ``explicit_no_plan``
gate mode ``off``                      executor only       ``mode_off``
"plan it first" wording                planned (*)         ``explicit_wording``
gate mode ``always``                   planned (*)         ``mode_always``
a short follow-up ("ok", "go on")      executor only       ``short_followup``
gate mode ``explicit``                 executor only       ``mode_explicit_no_request``
score >= threshold                     planned (*)         ``score_above_threshold``
otherwise                              executor only       ``score_below_threshold``
=====================================  ==================  ============================

(*) plan and execute, or plan for approval when plans need approval.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import pytest

from reasonix.control.gate import (
    GateMode,
    GateOptions,
    Route,
    decide,
    is_short_followup,
    multi_step_score,
)


@dataclass(frozen=True)
class Request:
    """A request text and what the table says about it."""

    name: str
    text: str
    wording: bool = False  # asks for a plan in words
    short: bool = False  # a short follow-up
    score: int = 0
    threshold: int = 3


REQUESTS = [
    Request("followup-word", "Go ahead!", short=True),
    Request("short", "rename x to y", short=True),
    Request("short-multiline", "fix a\nfix b", score=0),
    Request("wording-short", "make a plan", wording=True, short=True),
    Request(
        "wording-long", "Please plan it first: the cache layer is slow on big repos", wording=True
    ),
    Request(
        "big",
        "Refactor src/a.py, src/b.py and src/c.py, then update the tests and write the docs",
        score=6,
    ),
    Request("at-threshold", "fix the bug, add a note, update the docs", score=3),
    Request("above-threshold", "fix the bug, add a note, update the docs", score=3, threshold=4),
    Request("low", "explain how the session store keeps its events", score=0),
]

MODES: list[GateMode] = ["auto", "explicit", "always", "off"]


def expected(
    available: bool,
    plan_only: bool,
    revision: bool,
    plan: bool | None,
    mode: GateMode,
    approve: bool,
    req: Request,
) -> tuple[Route, str]:
    planned = Route.PLAN_FOR_APPROVAL if approve else Route.PLAN_AND_EXECUTE
    table: list[tuple[bool, Route, str]] = [
        (not available, Route.EXECUTOR_ONLY, "no_planner"),
        (plan_only, Route.PLAN_ONLY, "explicit_plan_only"),
        (revision, Route.PLAN_FOR_APPROVAL, "revised_plan"),
        (plan is True, planned, "explicit_flag"),
        (plan is False, Route.EXECUTOR_ONLY, "explicit_no_plan"),
        (mode == "off", Route.EXECUTOR_ONLY, "mode_off"),
        (req.wording, planned, "explicit_wording"),
        (mode == "always", planned, "mode_always"),
        (req.short, Route.EXECUTOR_ONLY, "short_followup"),
        (mode == "explicit", Route.EXECUTOR_ONLY, "mode_explicit_no_request"),
        (req.score >= req.threshold, planned, "score_above_threshold"),
    ]
    for applies, route, reason in table:
        if applies:
            return route, reason
    return Route.EXECUTOR_ONLY, "score_below_threshold"


#: the caller's flags: planner available, plan_only, revision, plan, plans need approval
FLAGS = list(
    itertools.product(
        [True, False], [False, True], [False, True], [None, True, False], [False, True]
    )
)


@pytest.mark.parametrize("req", REQUESTS, ids=[r.name for r in REQUESTS])
@pytest.mark.parametrize("mode", MODES)
def test_gate_table(mode: GateMode, req: Request) -> None:
    """Every combination of the caller's flags (48 rows) for this mode and request."""
    wrong: list[str] = []
    for available, plan_only, revision, plan, approve in FLAGS:
        options = GateOptions(mode=mode, threshold=req.threshold, approve_plans=approve)
        decision = decide(
            req.text,
            options,
            plan=plan,
            plan_only=plan_only,
            planner_available=available,
            revision=revision,
        )
        want = expected(available, plan_only, revision, plan, mode, approve, req)
        row = f"available={available} plan_only={plan_only} revision={revision} plan={plan} "
        row += f"approve={approve}"
        if (decision.route, decision.reason) != want:
            wrong.append(f"{row}: {decision} (want {want})")
        elif decision.reason.startswith("score_"):
            # A decision by score carries the score and what made it up.
            if (decision.score, decision.detail) != multi_step_score(req.text) or (
                decision.score != req.score
            ):
                wrong.append(f"{row}: score {decision.score} {decision.detail!r}")
        elif decision.score != 0 or (
            decision.detail != ("no planner is configured" if not available else "")
        ):
            wrong.append(f"{row}: score {decision.score} detail {decision.detail!r}")
    assert not wrong, "\n".join(wrong)


#: text, its multi-step score, the parts of the detail (in order)
SCORES: list[tuple[str, int, list[str]]] = [
    ("", 0, ["no multi-step signals"]),
    ("fix the bug", 0, ["no multi-step signals"]),
    ("fix the bug and add a note", 1, ["2 distinct actions +1"]),
    (
        "fix the bug, add a note, update the docs",
        3,
        ["3 distinct actions +2", "3 clauses each starting with an action +1"],
    ),
    (
        "FIX the bug; ADD a note then UPDATE the docs",
        3,
        ["3 distinct actions +2", "3 clauses each starting with an action +1"],
    ),
    ("fix a, fix b, fix c", 1, ["3 clauses each starting with an action +1"]),
    ("fix a, add b", 1, ["2 distinct actions +1"]),
    ("- one\n- two", 0, ["no multi-step signals"]),
    ("- one\n- two\n- three", 2, ["list of 3 items +2"]),
    ("1. one\n2) two\n* three\n• four", 2, ["list of 4 items +2"]),
    ("look at a.py", 0, ["no multi-step signals"]),
    ("look at a.py and b.py", 1, ["2 files named +1"]),
    ("look at a.py, a.py and b.py", 1, ["2 files named +1"]),
    ("compare src/a.py, lib/b.rs and c.md", 2, ["3 files named +2"]),
    ("see 1a.py, 2b.py and 3c.py", 0, ["no multi-step signals"]),
    ("version 1.5 and 2.0", 0, ["no multi-step signals"]),
    ("refactor the parser", 1, ["cross-cutting (refactor) +1"]),
    ("across the codebase", 1, ["cross-cutting (across the) +1"]),
    ("end-to-end tests please", 1, ["cross-cutting (end-to-end) +1"]),
    (
        "migrate the db and refactor the api",
        3,
        ["cross-cutting (migrate, refactor) +2", "2 distinct actions +1"],
    ),
    (
        "migrate, refactor, rewrite and redesign it",
        5,
        [
            "cross-cutting (migrate, redesign, refactor, rewrite) +2",
            "3 distinct actions +2",
            "3 clauses each starting with an action +1",
        ],
    ),
    ("x" * 500, 0, ["no multi-step signals"]),
    ("x" * 501, 1, ["long request +1"]),
    ("x" * 1200, 1, ["long request +1"]),
    ("x" * 1201, 2, ["long request +2"]),
    (
        "Refactor src/a.py, src/b.py and src/c.py, then update the tests and write the docs",
        6,
        [
            "3 files named +2",
            "cross-cutting (refactor) +1",
            "3 distinct actions +2",
            "3 clauses each starting with an action +1",
        ],
    ),
]


@pytest.mark.parametrize(("text", "score", "parts"), SCORES, ids=[s[0][:40] for s in SCORES])
def test_multi_step_score_table(text: str, score: int, parts: list[str]) -> None:
    assert multi_step_score(text) == (score, "; ".join(parts))


@pytest.mark.parametrize(("text", "score", "parts"), SCORES, ids=[s[0][:40] for s in SCORES])
@pytest.mark.parametrize("mode", ["auto", "always"])
def test_the_threshold_is_a_floor_on_both_sides(
    text: str, score: int, parts: list[str], mode: GateMode
) -> None:
    """A request plans at a threshold equal to its score and not at one above it (auto);
    in ``always`` mode the threshold changes nothing. (No request is a short follow-up here.)"""
    at = decide(text, GateOptions(mode=mode, threshold=score, short_followup_chars=0))
    above = decide(text, GateOptions(mode=mode, threshold=score + 1, short_followup_chars=0))
    if mode == "always":
        assert at.reason == above.reason == "mode_always"
        return
    assert (at.route, at.reason) == (Route.PLAN_AND_EXECUTE, "score_above_threshold")
    assert (above.route, above.reason) == (Route.EXECUTOR_ONLY, "score_below_threshold")
    assert at.score == above.score == score


#: text, the short-follow-up limit, whether it is a short follow-up
FOLLOWUPS: list[tuple[str, int, bool]] = [
    *((word, 0, True) for word in ("ok", "OK.", "Go ahead!", "thank you", "lgtm", "try again")),
    ("  continue  ", 0, True),
    ("go-ahead", 0, False),  # the hyphen is dropped: "goahead" is no follow-up word
    ("okay then", 0, False),
    ("fix it", 0, False),
    ("fix it", 16, True),
    ("fifteen chars!!", 16, True),
    ("sixteen chars!!!", 16, False),
    ("sixteen chars!!!", 17, True),
    ("fix a\nfix b", 16, False),
    ("fix a\nfix b", 100, False),
    ("  fix it  \n", 16, True),  # surrounding whitespace does not count
    ("", 16, True),
    ("", 0, False),
]


@pytest.mark.parametrize(("text", "limit", "short"), FOLLOWUPS)
def test_short_followup_table(text: str, limit: int, short: bool) -> None:
    assert is_short_followup(text, limit) is short
    decision = decide(text, GateOptions(short_followup_chars=limit, threshold=0))
    # threshold 0: anything that is not a short follow-up plans by score
    assert decision.reason == ("short_followup" if short else "score_above_threshold")


def test_the_plan_wording_is_recognised_in_its_forms() -> None:
    asked = [
        "plan first",
        "Plan it first please",
        "plan this first",
        "make a plan for the migration",
        "Write a plan",
        "come up with a plan",
        "plan it out",
        "plan that out",
        "start with a plan",
        "think it through first",
    ]
    not_asked = ["the plan is fine", "planet first", "a planning doc", "explain the plan file"]
    options = GateOptions(mode="auto", threshold=99)
    for text in asked:
        assert decide(text, options).reason == "explicit_wording", text
    for text in not_asked:
        assert decide(text, options).reason != "explicit_wording", text


#: with the default options (a library user's Controller, and the config's defaults): text,
#: the reason
DEFAULTS: list[tuple[str, str]] = [
    ("fix the bug, add a note, update the docs", "score_above_threshold"),  # score 3
    ("- one\n- two\n- three", "score_below_threshold"),  # score 2
    ("fix it all and add a note", "score_below_threshold"),  # score 1, 25 characters
    ("fifteen chars!!", "short_followup"),
    ("sixteen chars!!!", "score_below_threshold"),
]


@pytest.mark.parametrize(("text", "reason"), DEFAULTS)
def test_the_default_options(text: str, reason: str) -> None:
    assert decide(text, GateOptions()).reason == reason
