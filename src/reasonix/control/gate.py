"""The planner gate: decides per turn whether the planner runs, deterministically.

Inputs are an explicit request (a flag on the call, "plan first" wording, an always-plan mode)
and a score over the request text for multi-step work. Short follow-ups never plan. Every
decision carries a stable reason code so a user can see why the planner did or did not run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal


class Route(StrEnum):
    EXECUTOR_ONLY = "executor_only"
    PLAN_AND_EXECUTE = "plan_and_execute"
    PLAN_ONLY = "plan_only"
    PLAN_FOR_APPROVAL = "plan_for_approval"


GateMode = Literal["auto", "explicit", "always", "off"]

#: Each route in plain words, for a frontend to show instead of the route's code (the reason
#: codes stay in the event for a details view).
ROUTE_WORDS: dict[str, str] = {
    Route.EXECUTOR_ONLY: "",
    Route.PLAN_AND_EXECUTE: (
        "The planner studies the task first; then the executor carries out its plan."
    ),
    Route.PLAN_ONLY: "The planner makes a plan; nothing is changed.",
    Route.PLAN_FOR_APPROVAL: "The planner makes a plan for you to approve before anything runs.",
}


@dataclass(frozen=True, slots=True)
class GateOptions:
    """``mode``: ``auto`` (explicit requests + score), ``explicit`` (only when asked),
    ``always``, ``off``. ``threshold``: the score at which ``auto`` plans."""

    mode: GateMode = "auto"
    threshold: int = 3
    short_followup_chars: int = 16
    approve_plans: bool = False


@dataclass(frozen=True, slots=True)
class GateDecision:
    route: Route
    reason: str
    score: int = 0
    detail: str = ""


_FOLLOWUPS = {
    "ok",
    "okay",
    "k",
    "yes",
    "y",
    "no",
    "n",
    "continue",
    "go",
    "go on",
    "go ahead",
    "proceed",
    "thanks",
    "thank you",
    "sure",
    "do it",
    "next",
    "retry",
    "try again",
    "sounds good",
    "lgtm",
}

_PLAN_WORDING = re.compile(
    r"\b(plan (it |this |that )?first|make a plan|write a plan|come up with a plan|"
    r"plan (it|this|that) out|start with a plan|think it through first)\b",
    re.IGNORECASE,
)
_LIST_ITEM = re.compile(r"^\s*(\d+[.)]|[-*•])\s+\S", re.MULTILINE)
_FILE_TOKEN = re.compile(r"(?<![\w/.-])(?:[\w.-]+/)*[\w-]+\.[A-Za-z][A-Za-z0-9]{0,5}\b")
_CROSS_CUTTING = re.compile(
    r"\b(migrat\w*|refactor\w*|rewrit\w*|redesign\w*|restructur\w*|overhaul\w*|port(ing)? "
    r"(it |this )?to|across (the|all|every)|every (file|module|test)|all (files|modules|tests)|"
    r"end[- ]to[- ]end|architecture|upgrade|replace \w+ with)\b",
    re.IGNORECASE,
)
_ACTION_VERBS = (
    "add",
    "analyze",
    "analyse",
    "build",
    "change",
    "clean",
    "convert",
    "create",
    "delete",
    "deploy",
    "design",
    "document",
    "extract",
    "fix",
    "generate",
    "implement",
    "improve",
    "install",
    "integrate",
    "investigate",
    "migrate",
    "move",
    "optimize",
    "profile",
    "refactor",
    "remove",
    "rename",
    "replace",
    "report",
    "rewrite",
    "run",
    "set",
    "split",
    "support",
    "test",
    "update",
    "upgrade",
    "validate",
    "verify",
    "write",
)
_VERB_RE = re.compile(r"\b(" + "|".join(_ACTION_VERBS) + r")\b", re.IGNORECASE)


_CLAUSE_SPLIT = re.compile(r",|;|\bthen\b|\band\b|\n", re.IGNORECASE)


def multi_step_score(text: str) -> tuple[int, str]:
    """Score ``text`` for multi-step work; return the score and what contributed."""
    parts: list[str] = []
    score = 0
    items = len(_LIST_ITEM.findall(text))
    if items >= 3:
        score += 2
        parts.append(f"list of {items} items +2")
    files = {m.group(0) for m in _FILE_TOKEN.finditer(text) if not m.group(0)[0].isdigit()}
    if len(files) >= 3:
        score += 2
        parts.append(f"{len(files)} files named +2")
    elif len(files) == 2:
        score += 1
        parts.append("2 files named +1")
    cross = {m.group(0).lower() for m in _CROSS_CUTTING.finditer(text)}
    if cross:
        gained = min(len(cross), 2)
        score += gained
        parts.append(f"cross-cutting ({', '.join(sorted(cross))}) +{gained}")
    verbs = {m.group(0).lower() for m in _VERB_RE.finditer(text)}
    if len(verbs) >= 3:
        score += 2
        parts.append(f"{len(verbs)} distinct actions +2")
    elif len(verbs) == 2:
        score += 1
        parts.append("2 distinct actions +1")
    clauses = [c.strip() for c in _CLAUSE_SPLIT.split(text) if c.strip()]
    led = sum(1 for c in clauses if _VERB_RE.match(c))
    if led >= 3:
        score += 1
        parts.append(f"{led} clauses each starting with an action +1")
    if len(text) > 1200:
        score += 2
        parts.append("long request +2")
    elif len(text) > 500:
        score += 1
        parts.append("long request +1")
    return score, "; ".join(parts) or "no multi-step signals"


def is_short_followup(text: str, limit: int) -> bool:
    cleaned = re.sub(r"[^\w\s]", "", text).strip().lower()
    return cleaned in _FOLLOWUPS or (len(text.strip()) < limit and "\n" not in text.strip())


def decide(
    text: str,
    options: GateOptions,
    *,
    plan: bool | None = None,
    plan_only: bool = False,
    planner_available: bool = True,
    revision: bool = False,
) -> GateDecision:
    """The route for one turn. ``plan``: an explicit flag from the caller (``/plan``): True forces
    planning, False forbids it. ``plan_only``: plan and stop. ``revision``: a revised plan the
    user asked for when declining one, offered for approval the same way."""
    executed = Route.PLAN_FOR_APPROVAL if options.approve_plans else Route.PLAN_AND_EXECUTE
    if not planner_available:
        return GateDecision(Route.EXECUTOR_ONLY, "no_planner", detail="no planner is configured")
    if plan_only:
        return GateDecision(Route.PLAN_ONLY, "explicit_plan_only")
    if revision:
        return GateDecision(Route.PLAN_FOR_APPROVAL, "revised_plan")
    if plan is True:
        return GateDecision(executed, "explicit_flag")
    if plan is False:
        return GateDecision(Route.EXECUTOR_ONLY, "explicit_no_plan")
    if options.mode == "off":
        return GateDecision(Route.EXECUTOR_ONLY, "mode_off")
    if _PLAN_WORDING.search(text):
        return GateDecision(executed, "explicit_wording")
    if options.mode == "always":
        return GateDecision(executed, "mode_always")
    if is_short_followup(text, options.short_followup_chars):
        return GateDecision(Route.EXECUTOR_ONLY, "short_followup")
    if options.mode == "explicit":
        return GateDecision(Route.EXECUTOR_ONLY, "mode_explicit_no_request")
    score, detail = multi_step_score(text)
    if score >= options.threshold:
        return GateDecision(executed, "score_above_threshold", score, detail)
    return GateDecision(Route.EXECUTOR_ONLY, "score_below_threshold", score, detail)
