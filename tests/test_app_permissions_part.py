"""``/permissions`` and ``session.permissions``: the mode and every rule in force, each with
where it came from — the user's config.toml, the project's reasonix.toml, a command-line flag,
an approval for the session, a Claude Code settings hook — and what a project file wrote that
was left out. Through the façade and the command table, against the fake servers."""

from __future__ import annotations

import json
from pathlib import Path

from reasonix.app import AgentSession
from reasonix.app.commands import answer
from reasonix.config import load_config
from reasonix.safety.permissions import ApprovalAnswer
from reasonix.store import SessionStore
from reasonix.testing import Reply
from tests.support.approvals import ScriptedApprover
from tests.support.project import project_toml
from tests.support.sessions import ENV, Servers


def _write_configs(root: Path, servers: Servers, project_extra: str) -> Path:
    user = root / "user" / "config.toml"
    user.parent.mkdir()
    user.write_text('[permissions]\nallow = ["bash(git status*)"]\ndeny = ["bash(rm -rf *)"]\n')
    (root / "reasonix.toml").write_text(project_toml(*servers, project_extra))
    return user


def test_the_loader_records_where_each_rule_of_a_list_came_from(
    tmp_path: Path, servers: Servers
) -> None:
    user = _write_configs(tmp_path, servers, '[permissions]\ndeny = ["edit(secret/**)"]\n')
    config = load_config(
        tmp_path, overrides={"permissions.allow": ["read"]}, environ=ENV, user_config=user
    )
    assert config.permissions.deny == ("bash(rm -rf *)", "edit(secret/**)")
    assert dict(config.item_provenance["permissions.deny"]) == {
        "bash(rm -rf *)": f"user:{user}",
        "edit(secret/**)": f"project:{tmp_path / 'reasonix.toml'}",
    }
    # the flag adds to the user's allow list; the user's rule keeps its origin
    assert dict(config.item_provenance["permissions.allow"]) == {
        "bash(git status*)": f"user:{user}",
        "read": "flag",
    }


async def test_permissions_lists_each_rule_with_its_source(
    tmp_path: Path, servers: Servers, store: SessionStore
) -> None:
    ex, _ = servers
    user = _write_configs(tmp_path, servers, '[permissions]\ndeny = ["edit(secret/**)"]\n')
    config = load_config(
        tmp_path, overrides={"permissions.allow": ["read"]}, environ=ENV, user_config=user
    )
    approver = ScriptedApprover(ApprovalAnswer.allow_session())
    session = await AgentSession.open(config, tmp_path, store=store, environ=ENV, approver=approver)
    try:
        ex.push(
            Reply.call("write_file", {"path": "notes/a.txt", "content": "one\n"}),
            Reply.text("wrote it"),
        )
        await session.run_turn("write a note")
        (proposed,) = approver.requests[0].session_rules
        session.set_mode("auto-edit")
        entries = session.permissions.entries()
        reply = await answer(session, "/permissions", "run")
    finally:
        await session.aclose()
    by_rule = {(e.action, e.rule): e for e in entries}
    assert by_rule[("deny", "bash(rm -rf *)")].source == f"user:{user}"
    assert by_rule[("deny", "edit(secret/**)")].source == f"project:{tmp_path / 'reasonix.toml'}"
    assert by_rule[("allow", "bash(git status*)")].source == f"user:{user}"
    assert by_rule[("allow", "read")].source == "flag"
    assert by_rule[("allow", proposed)].kind == "session"
    assert by_rule[("allow", proposed)].source == "session"
    (mode,) = [e for e in entries if e.kind == "mode"]
    assert (mode.action, mode.source) == ("auto-edit", "session:mode")
    text = reply.text
    assert not reply.error
    assert "Permission mode: auto-edit (changed in this session)" in text
    assert "bash(rm -rf *)" in text and f"your config ({user})" in text
    assert f"project file ({tmp_path / 'reasonix.toml'})" in text
    assert "command line" in text and "allowed for this session" in text
    assert not any("/permissions" in json.dumps(r.body["messages"]) for r in ex.requests)


async def test_permissions_names_claude_hooks_and_what_an_untrusted_folder_left_out(
    tmp_path: Path, servers: Servers, store: SessionStore
) -> None:
    user = _write_configs(
        tmp_path, servers, '[permissions]\nallow = ["bash(*)"]\ndeny = ["bash(curl *)"]\n'
    )
    claude = tmp_path / ".claude"
    claude.mkdir()
    hook = {"matcher": "Bash", "hooks": [{"type": "command", "command": "./no-rm.sh"}]}
    settings = {"hooks": {"PreToolUse": [hook]}, "permissions": {"deny": ["Bash(rm:*)"]}}
    (claude / "settings.json").write_text(json.dumps(settings))
    # The providers come from the user's own file: an untrusted project decides nothing else.
    user.write_text(project_toml(*servers, user.read_text()))
    trusted = load_config(tmp_path, environ=ENV, user_config=user, trust=True)
    untrusted = load_config(tmp_path, environ=ENV, user_config=user, trust=False)
    seen = {}
    for name, config in (("trusted", trusted), ("untrusted", untrusted)):
        session = await AgentSession.open(config, tmp_path, store=store, environ=ENV)
        try:
            seen[name] = (session.permissions.entries(), "\n".join(session.permissions.lines()))
        finally:
            await session.aclose()
    entries, text = seen["trusted"]
    (hooked,) = [e for e in entries if e.kind == "hook"]
    assert hooked.rule == "PreToolUse [Bash] ./no-rm.sh"
    assert hooked.source == f"project:{claude / 'settings.json'}"
    assert f"Claude Code settings ({claude / 'settings.json'})" in text
    # a trusted project's allow list is in force: it says so, naming the file
    (allowed,) = [e for e in entries if e.kind == "rule" and e.action == "allow"]
    assert (allowed.rule, allowed.source) == ("bash(*)", f"project:{tmp_path / 'reasonix.toml'}")
    entries, text = seen["untrusted"]
    # untrusted, the project's deny rule still applies; its allow rule and hooks do not
    assert not [e for e in entries if e.kind == "hook"]
    assert ("deny", "bash(curl *)") in {(e.action, e.rule) for e in entries if e.kind == "rule"}
    ignored = [e.rule for e in entries if e.kind == "ignored"]
    assert any("permissions.allow" in note and "bash(*)" in note for note in ignored), ignored
    assert any(".claude/settings.json: hooks (PreToolUse)" in note for note in ignored), ignored
    assert "Not applied" in text
    # Claude Code's own rules are not ours: said, trusted or not, with the file
    for entries, text in seen.values():
        (claude_rule,) = [e for e in entries if "Bash(rm:*)" in e.rule]
        assert claude_rule.kind == "ignored"
        assert claude_rule.source == f"project:{claude / 'settings.json'}"
        assert "deny Bash(rm:*) (Claude Code's rule: not applied" in text
