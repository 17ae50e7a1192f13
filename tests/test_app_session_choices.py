"""What opening a session decides, each with the line that decides it: a new session unless
the last one is asked for, the confinement chosen from the configuration (never silently
"off"), and the refusal to run bash unasked and unconfined for an approver that says yes to
everything."""

from __future__ import annotations

from pathlib import Path

import pytest

from reasonix.config import load_config
from reasonix.errors import ConfigError
from reasonix.safety.permissions import ApprovalAnswer, ApprovalRequest
from reasonix.store import SessionStore
from reasonix.testing import Reply
from tests.support.project import project_toml
from tests.support.sessions import ENV, Servers, open_session

#: no bubblewrap on this PATH: bash can only run unconfined
NO_BWRAP = {**ENV, "PATH": "/nonexistent"}


class Approves:
    """An approver with a person behind it (``unattended`` not set)."""

    async def approve(self, request: ApprovalRequest) -> ApprovalAnswer:
        return ApprovalAnswer("once")


class SaysYesToEverything(Approves):
    unattended = True


async def test_a_second_open_starts_a_new_session_unless_the_last_is_asked_for(
    tmp_path: Path, servers: Servers, store: SessionStore
) -> None:
    servers[0].push(Reply.text("first"))
    first = await open_session(tmp_path, servers, store)
    try:
        await (first.start_turn("hi")).result()
    finally:
        await first.aclose()
    again = await open_session(tmp_path, servers, store)
    try:
        assert again.session_id != first.session_id and not again.resumed
    finally:
        await again.aclose()
    last = await open_session(tmp_path, servers, store, continue_last=True)
    try:
        assert last.session_id == first.session_id and last.resumed
    finally:
        await last.aclose()


async def open_in(
    root: Path, servers: Servers, store: SessionStore, sandbox: str = "", **kwargs: object
):  # type: ignore[no-untyped-def]
    from reasonix.app import AgentSession

    (root / "user.toml").write_text(sandbox)
    (root / "reasonix.toml").write_text(project_toml(*servers))
    config = load_config(root, environ=NO_BWRAP, user_config=root / "user.toml")
    return await AgentSession.open(config, root, store=store, environ=NO_BWRAP, **kwargs)


async def test_the_session_runs_bash_under_the_configured_confinement(
    tmp_path: Path, servers: Servers, store: SessionStore
) -> None:
    session = await open_in(tmp_path, servers, store)
    try:
        assert session.bash.mode == "auto"
        assert session.bash.notice == "bash is NOT confined: bubblewrap (bwrap) is not installed"
        assert not session.bash.acknowledged
    finally:
        await session.aclose()
    off = await open_in(tmp_path, servers, store, '[sandbox]\nbash = "off"\n')
    try:
        assert off.bash.mode == "off" and off.bash.acknowledged
    finally:
        await off.aclose()


async def test_an_approver_that_says_yes_to_everything_needs_confinement(
    tmp_path: Path, servers: Servers, store: SessionStore
) -> None:
    with pytest.raises(ConfigError, match="--yes runs shell commands without asking"):
        await open_in(tmp_path, servers, store, approver=SaysYesToEverything())
    # an approver with a person behind it may open unconfined (each command is asked)
    asked = await open_in(tmp_path, servers, store, approver=Approves())
    await asked.aclose()
    # and so may the yes-to-everything one once the user accepted unconfined commands
    accepted = await open_in(
        tmp_path,
        servers,
        store,
        "[sandbox]\nallow_unconfined = true\n",
        approver=SaysYesToEverything(),
    )
    await accepted.aclose()
