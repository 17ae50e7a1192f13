"""Opening the session façade on a temp project wired to two fake DeepSeek servers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reasonix.app import AgentSession
from reasonix.config import load_config
from reasonix.store import SessionStore
from reasonix.testing import FakeDeepSeekServer
from tests.support.project import KEY_ENV, project_toml

#: The environment the project's key is read from.
ENV = {KEY_ENV: "sk-test"}

#: (executor server, planner server), as the ``servers`` fixture yields them.
Servers = tuple[FakeDeepSeekServer, FakeDeepSeekServer]


async def open_session(
    root: Path,
    servers: Servers,
    store: SessionStore,
    overrides: dict[str, object] | None = None,
    *,
    environ_extra: dict[str, str] | None = None,
    **kwargs: Any,
) -> AgentSession:
    """Write ``root/reasonix.toml`` pointing at ``servers``, load it (with ``overrides``, no
    user config) and open a session there; ``environ_extra`` joins the key in the session's
    environment (e.g. ``REASONIX_CONFIG_DIR`` for the user's commands); ``kwargs`` go to
    :meth:`AgentSession.open`."""
    (root / "reasonix.toml").write_text(project_toml(*servers))
    environ = {**ENV, **(environ_extra or {})}
    config = load_config(
        root, overrides=overrides, environ=environ, user_config=root / "no-user.toml"
    )
    return await AgentSession.open(config, root, store=store, environ=environ, **kwargs)
