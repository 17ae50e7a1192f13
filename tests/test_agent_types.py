"""``/agents`` (``session.agent_types``): the subagent types the ``task`` tool offers — the
built-in ``general-purpose``, ``Explore`` and ``Plan``, the project's ``.claude/agents`` and
``.reasonix/agents`` profiles and the user's — with their tools and where each came from; in a
folder that is not trusted the project's profiles are listed as not loaded."""

from __future__ import annotations

from pathlib import Path

from reasonix.app import AgentSession
from reasonix.app.agent_types import AgentType
from reasonix.app.commands import answer
from reasonix.config import load_config
from reasonix.store import SessionStore
from tests.support.project import project_toml
from tests.support.sessions import ENV, Servers

REVIEWER = """\
---
name: reviewer
description: Reviews a change for bugs.
tools: Read, Grep
---
You review code.
"""

SCRIBE = """\
---
name: scribe
description: Writes summaries.
model: deepseek-v4-pro
---
You summarise.
"""


async def _types(
    root: Path, servers: Servers, store: SessionStore, *, trusted: bool
) -> tuple[list[AgentType], str]:
    user_dir = root / "cfg"
    (user_dir / "agents").mkdir(parents=True, exist_ok=True)
    (user_dir / "agents" / "scribe.md").write_text(SCRIBE)
    (user_dir / "config.toml").write_text(project_toml(*servers))
    environ = {**ENV, "REASONIX_CONFIG_DIR": str(user_dir)}
    config = load_config(root, environ=environ, user_config=user_dir / "config.toml", trust=trusted)
    session = await AgentSession.open(config, root, store=store, environ=environ)
    try:
        reply = await answer(session, "/agents", "acp")
        return session.agent_types(), reply.text
    finally:
        await session.aclose()


async def test_agents_lists_builtin_project_and_user_types(
    tmp_path: Path, servers: Servers, store: SessionStore
) -> None:
    (tmp_path / ".claude" / "agents").mkdir(parents=True)
    (tmp_path / ".claude" / "agents" / "reviewer.md").write_text(REVIEWER)
    types, text = await _types(tmp_path, servers, store, trusted=True)
    by_name = {t.name: t for t in types}
    assert list(by_name)[:3] == ["general-purpose", "Explore", "Plan"]
    assert by_name["general-purpose"].writer and not by_name["Explore"].writer
    explore = set(by_name["Explore"].tools or ())
    assert "read_file" in explore and "write_file" not in explore
    reviewer = by_name["reviewer"]
    assert reviewer.source == "project" and reviewer.loaded
    assert reviewer.path == str(tmp_path / ".claude" / "agents" / "reviewer.md")
    assert set(reviewer.tools or ()) == {"read_file", "grep"}
    scribe = by_name["scribe"]
    assert (scribe.source, scribe.model) == ("user", "deepseek-v4-pro")
    assert "reviewer (read-only; a writer" in text and "tools: " in text
    assert "NOT LOADED" not in text


async def test_an_untrusted_folders_profiles_are_marked_not_loaded(
    tmp_path: Path, servers: Servers, store: SessionStore
) -> None:
    (tmp_path / ".reasonix" / "agents").mkdir(parents=True)
    (tmp_path / ".reasonix" / "agents" / "reviewer.md").write_text(REVIEWER)
    types, text = await _types(tmp_path, servers, store, trusted=False)
    by_name = {t.name: t for t in types}
    assert not by_name["reviewer"].loaded and by_name["scribe"].loaded
    assert by_name["reviewer"].tools == ("Read", "Grep")  # as the file writes them
    assert "NOT LOADED: this folder is not trusted" in text
    assert "tools (as written): Read, Grep" in text
