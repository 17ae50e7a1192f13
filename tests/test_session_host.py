"""The session host the long-running frontends (ACP, the dashboard) share: a new session in a
folder, the same session again by id (the open one, or the stored one resumed), a session
another store holds refused with what to do, a folder without credentials refused as a
start-up error, and every session closed (its claim released) at the end. In-process against
the fake DeepSeek servers, a real store and real folders."""

from __future__ import annotations

from pathlib import Path

import pytest

from reasonix.app.host import SessionHost
from reasonix.app.launch import Launch
from reasonix.errors import SessionError, StartupError
from reasonix.store import SessionStore
from reasonix.testing import Reply
from tests.support.project import project_toml
from tests.support.sessions import ENV, Servers


def _host(store: SessionStore) -> SessionHost:
    return SessionHost(Launch(None, dict(ENV), opened_store=store, trust=True))


def _folder(root: Path, name: str, servers: Servers) -> Path:
    folder = root / name
    folder.mkdir()
    (folder / "reasonix.toml").write_text(project_toml(*servers))
    return folder


async def test_sessions_are_opened_per_folder_and_found_again_by_id(
    tmp_path: Path, servers: Servers, store: SessionStore
) -> None:
    ex, _ = servers
    host = _host(store)
    one, two = _folder(tmp_path, "one", servers), _folder(tmp_path, "two", servers)
    try:
        first = await host.open(one)
        second = await host.open(two)
        assert first.workspace == one.resolve() and second.workspace == two.resolve()
        assert host.get(first.session_id) is first and first.session_id in host
        ex.push(Reply.text("hello"))
        await first.run_turn("say hello")
        # resuming an open id gives the open session
        assert await host.open(one, resume_id=first.session_id) is first
        assert [info.id for info in host.list(one)] == [first.session_id]
        assert sorted(s.session_id for s in host) == sorted([first.session_id, second.session_id])
    finally:
        await host.aclose()
    assert host.get(first.session_id) is None
    # closed: its claim is released, so another host may resume it, with its conversation
    other = _host(store)
    try:
        resumed = await other.open(one, resume_id=first.session_id)
        assert resumed.resumed and resumed is not first
        assert await other.open(one, resume_id=first.session_id) is resumed
        assert list(other) == [resumed]
    finally:
        await other.aclose()


async def test_a_session_held_elsewhere_is_refused_and_a_folder_without_a_key_too(
    tmp_path: Path, servers: Servers, store: SessionStore
) -> None:
    folder = _folder(tmp_path, "w", servers)
    held = _host(store)
    session = await held.open(folder)
    sid = session.session_id
    try:
        with SessionStore(store.path) as elsewhere:
            host = SessionHost(Launch(None, dict(ENV), opened_store=elsewhere, trust=True))
            assert host.in_use_elsewhere(sid)
            with pytest.raises(SessionError, match="another reasonix process"):
                await host.open(folder, resume_id=sid)
            keyless = SessionHost(Launch(None, {}, opened_store=elsewhere, trust=True))
            with pytest.raises(StartupError):
                await keyless.open(folder)
            assert list(host) == [] and list(keyless) == []
    finally:
        await held.aclose()
