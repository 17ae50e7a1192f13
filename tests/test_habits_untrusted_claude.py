"""Issue 28, an untrusted folder's ``.claude/`` through the real CLI: the hooks of
``.claude/settings.json`` (which do not run there) are named to the user in the trust question
of the app, in the one notice of ``reasonix run`` and in ``reasonix doctor``, and so are the
folders of commands, profiles and skills that are not loaded."""

from __future__ import annotations

import json
import sys

import pytest

from reasonix.testing import Reply
from tests.support.project import Project, json_lines, project, project_toml
from tests.support.tui import Terminal

__all__ = ["project"]

pytestmark = pytest.mark.slow

SETTINGS = {
    "hooks": {
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "./block-rm.sh"}]}
        ]
    }
}


def untrusted(project: Project) -> None:
    """Providers in the user's own config, the folder not trusted, a .claude/ with hooks."""
    (project.root / "reasonix.toml").unlink()
    (project.config_dir / "config.toml").write_text(project_toml(project.ex, project.pl))
    claude = project.root / ".claude"
    (claude / "commands").mkdir(parents=True)
    (claude / "commands" / "review.md").write_text("Review the code.\n")
    (claude / "settings.json").write_text(json.dumps(SETTINGS))


def test_run_names_the_ignored_hooks_in_its_notice(project: Project) -> None:
    untrusted(project)
    project.ex.push(Reply.text("hi"))
    proc = project.run("run", "hello")
    assert proc.returncode == 0, proc.stderr
    assert "This folder is not trusted" in proc.stderr
    assert ".claude/settings.json (hooks (PreToolUse))" in proc.stderr
    assert ".claude/ (commands (not loaded))" in proc.stderr


def test_stream_json_carries_the_notice(project: Project) -> None:
    untrusted(project)
    project.ex.push(Reply.text("hi"))
    proc = project.run("run", "--output-format", "stream-json", "hello")
    notices = [e["message"] for e in json_lines(proc.stdout) if e.get("kind") == "notice"]
    assert any(".claude/settings.json (hooks (PreToolUse))" in n for n in notices), notices


def test_doctor_names_the_ignored_hooks(project: Project) -> None:
    untrusted(project)
    proc = project.run("doctor")
    assert ".claude/settings.json (hooks (PreToolUse))" in proc.stdout


def test_a_trusted_folder_has_no_such_notice(project: Project) -> None:
    untrusted(project)
    project.write_user_config(project_toml(project.ex, project.pl))  # now trusted
    project.ex.push(Reply.text("hi"))
    proc = project.run("run", "hello")
    assert proc.returncode == 0, proc.stderr
    assert "not trusted" not in proc.stderr


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty")
def test_the_trust_question_names_the_hook_command(project: Project) -> None:
    untrusted(project)
    term = Terminal(project)
    try:
        screen = term.wait("./block-rm.sh")
        assert ".claude/settings.json" in screen
        term.sendline("n")
        screen = term.wait(r"commands \(not loaded\)")  # the notice after "no"
        assert "This folder is not trusted" in screen
    finally:
        term.close()
