"""The permission decision as a value: :func:`reasonix.safety.permissions.decide` over every
mode, the built-in tools of each kind, rule sets and PreToolUse hook verdicts (hundreds of rows,
no I/O but building the subjects). The table below is the module docstring's, written out."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from reasonix.safety.permissions import Mode, Rule, Rules, Verdict, call_subject, decide
from reasonix.tools.builtin import default_registry
from reasonix.tools.registry import Tool

#: tool, its arguments, its kind
TOOLS: list[tuple[str, dict[str, Any], str]] = [
    ("read_file", {"path": "a.txt"}, "read"),
    ("grep", {"pattern": "x", "path": "."}, "read"),
    ("write_file", {"path": "a.txt", "content": "x"}, "edit"),
    ("edit_file", {"path": "a.txt", "old_string": "a", "new_string": "b"}, "edit"),
    ("delete_file", {"path": "a.txt"}, "destructive"),
    ("bash", {"command": "make test"}, "other"),
]

#: what the mode decides with no rule and no hook (the module docstring's table)
BY_MODE = {
    Mode.ASK: {"read": "allow", "edit": "ask", "destructive": "ask", "other": "ask"},
    # auto decides as ask does; the reviewer answers afterwards what is off the hard floor
    Mode.AUTO: {"read": "allow", "edit": "ask", "destructive": "ask", "other": "ask"},
    Mode.AUTO_EDIT: {"read": "allow", "edit": "allow", "destructive": "ask", "other": "ask"},
    Mode.PLAN: {"read": "allow", "edit": "deny", "destructive": "deny", "other": "deny"},
    Mode.YOLO: {"read": "allow", "edit": "allow", "destructive": "allow", "other": "allow"},
}

HOOKS = [None, "ask", "allow"]
RULE_KINDS = ["none", "deny", "ask", "allow"]


def _expected(mode: Mode, kind: str, rule: str, hook: str | None) -> str:
    read = kind == "read"
    if rule == "deny":
        return "deny"  # in every mode, whatever the hook
    if mode is Mode.PLAN and not read:
        return "deny"  # plan mode refuses every change, whatever the hook
    if mode is Mode.YOLO:
        outcome = "allow"
    elif rule == "ask":
        outcome = "ask"
    elif rule == "allow":
        outcome = "allow"
    else:
        outcome = BY_MODE[mode][kind]
    if hook == "ask" and outcome == "allow":
        return "ask"
    if hook == "allow" and outcome == "ask":
        return "allow"
    return outcome


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Tool]]:
    ws = tmp_path_factory.mktemp("ws")
    return ws, {t.name: t for t in default_registry(ws)}


def _rules(kind: str, name: str) -> Rules:
    if kind == "none":
        return Rules()
    return Rules(**{kind: (Rule(name, kind),)})  # type: ignore[arg-type]


ROWS = list(itertools.product(list(Mode), TOOLS, RULE_KINDS, HOOKS))


@pytest.mark.parametrize(
    ("mode", "call", "rule", "hook"),
    ROWS,
    ids=[f"{m.value}-{c[0]}-{r}-{h}" for m, c, r, h in ROWS],
)
def test_decide_table(
    world: tuple[Path, dict[str, Tool]],
    mode: Mode,
    call: tuple[str, dict[str, Any], str],
    rule: str,
    hook: str | None,
) -> None:
    ws, tools = world
    name, args, kind = call
    tool = tools[name]
    verdict = decide(tool, call_subject(tool, args, ws), mode, _rules(rule, name), hook)
    assert verdict.outcome == _expected(mode, kind, rule, hook), verdict
    assert verdict.irreversible is None
    if rule == "deny":
        assert (verdict.via, verdict.rule) == ("rule", name) and name in verdict.reason
    elif (
        verdict.outcome == "allow"
        and hook == "allow"
        and _expected(mode, kind, rule, None) == "ask"
    ):
        assert verdict.via == "hook"
    elif rule == "allow" and verdict.outcome == "allow" and mode is not Mode.YOLO:
        assert (verdict.via, verdict.rule) == ("rule", name)
    if verdict.outcome == "ask":
        assert verdict.reason.startswith(f"{name} needs approval")
        assert verdict.session_rules  # something to allow for the session is proposed
        # the hard floor: an ask rule the user wrote or a hook that asked is never reviewed
        on_floor = rule == "ask" or hook == "ask"
        assert (verdict.floor is not None) == on_floor, verdict


IRREVERSIBLE_RULES: dict[str, Rules] = {
    "none": Rules(),
    "bare-allow": Rules(allow=(Rule("bash", "allow"),)),
    "star-allow": Rules(allow=(Rule("bash(*)", "allow"),)),
    "session-allow": Rules(session_allow=(Rule("bash(make *)", "allow"),)),
    "explicit-allow": Rules(allow=(Rule("bash(make *)", "allow"),)),
    "deny": Rules(deny=(Rule("bash(make *)", "deny"),)),
}
IRREVERSIBLE_ROWS = list(itertools.product(list(Mode), IRREVERSIBLE_RULES, HOOKS))


@pytest.mark.parametrize(("mode", "rules", "hook"), IRREVERSIBLE_ROWS)
def test_irreversible_asks_every_time_unless_named(
    world: tuple[Path, dict[str, Tool]], mode: Mode, rules: str, hook: str | None
) -> None:
    ws, tools = world
    bash = tools["bash"]
    subject = call_subject(bash, {"command": "make deploy"}, ws)
    why = "it deploys to production"
    verdict = decide(bash, subject, mode, IRREVERSIBLE_RULES[rules], hook, why)
    if rules == "deny" or mode is Mode.PLAN:
        assert verdict.outcome == "deny" and verdict.irreversible is None
    elif rules == "explicit-allow":
        assert (verdict.outcome, verdict.via, verdict.rule) == ("allow", "rule", "bash(make *)")
    else:
        # yolo, a bare or starred allow rule, the session's rules and the hook do not stop it
        assert verdict == Verdict(
            "ask",
            "irreversible",
            reason=f"bash needs approval every time, as no snapshot can undo it: {why}",
            session_rules=verdict.session_rules,
            irreversible=why,
            floor=f"no snapshot can undo it: {why}",  # never to auto mode's reviewer
        )


@pytest.mark.parametrize("mode", [Mode.ASK, Mode.AUTO_EDIT])
@pytest.mark.parametrize(
    "command",
    ["make test", "pytest -q tests", "npm run build", "cargo build --release", "ls build"],
)
def test_a_proposed_session_rule_allows_the_call_it_was_proposed_for(
    world: tuple[Path, dict[str, Tool]], mode: Mode, command: str
) -> None:
    """Asking proposes rules for "for this session"; with them in the session the same call
    is allowed without asking (what the approval path relies on)."""
    ws, tools = world
    bash = tools["bash"]
    subject = call_subject(bash, {"command": command}, ws)
    first = decide(bash, subject, mode, Rules())
    if first.outcome == "allow":  # a read-only form the mode allows anyway
        return
    assert first.outcome == "ask" and first.session_rules
    session = tuple(Rule(text, "allow") for text in first.session_rules)
    again = decide(bash, subject, mode, Rules(session_allow=session))
    assert (again.outcome, again.via) == ("allow", "session"), (first, again)


def test_decide_is_pure(world: tuple[Path, dict[str, Tool]]) -> None:
    """The same question gets the same answer, and deciding changes no rule."""
    ws, tools = world
    bash = tools["bash"]
    subject = call_subject(bash, {"command": "make"}, ws)
    rules = Rules(allow=(Rule("bash(ls *)", "allow"),))
    answers = {decide(bash, subject, Mode.ASK, rules) for _ in range(3)}
    assert len(answers) == 1 and rules == Rules(allow=(Rule("bash(ls *)", "allow"),))
