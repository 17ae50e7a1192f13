"""Secrets at rest: the store is private, and known secret values never stay in what is kept or
shown.

Attacks through the real ``python -m reasonix`` process with a scripted model on loopback: a
tool prints a ``$GITHUB_TOKEN``-like value read from a file in the workspace, or the provider's
own key (under a variable name that does not look secret); the model repeats it. Where it must
not appear: the next request to the model, the SQLite files (database and WAL, read as bytes),
``sessions show``, ``sessions export`` (JSON, markdown, a file), stream-json and text output.
File modes are read with ``os.stat`` under a permissive umask.

Controls: a string of the same shape that is not a known secret is kept everywhere; a short
value under a secret-looking name is kept (it would wreck ordinary text); files the model
writes in the workspace keep the user's umask (the store's modes are not a global umask).
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from reasonix.testing import FakeDeepSeekServer, Fault, Reply
from reasonix.testing.project import fake_project_toml
from tests.support.project import Project, json_lines

pytestmark = pytest.mark.slow

TOKEN = "ghp_Zq9XrT4mWv2LbN8cKd6PfHs3JyA7uE1oGi5R"
LOOKALIKE = "ghp_Aa1BbCc2DdEe3FfGg4HhIi5JjKk6LlMm7NnO"  # same shape, not a secret we know
PROVIDER_KEY = "sk-live-4f7a2c9e1b8d6a3f5c0e7b2d9a4f1c8e"
KEY_VAR = "LLM_ACCESS"  # our provider's key variable: a name no pattern would call secret
SHORT = "abc123"  # under the minimum length: never treated as a secret


def add_user_config(project: Project, text: str) -> None:
    """Add ``text`` to the user's config.toml (which also says the project folder is trusted)."""
    path = project.config_dir / "config.toml"
    path.write_text((path.read_text() if path.exists() else "") + "\n" + text)


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Project]:
    root = tmp_path / "proj"
    root.mkdir()
    with FakeDeepSeekServer() as ex, FakeDeepSeekServer() as pl:
        p = Project(root, tmp_path / "data", tmp_path / "cfg", ex, pl)
        p.config_dir.mkdir()
        (root / "reasonix.toml").write_text(
            fake_project_toml(ex.base_url, pl.base_url, key_env=KEY_VAR, max_steps=12)
        )
        add_user_config(p, f"[trust]\nfolders = [{json.dumps(str(root))}]\n")
        yield p


def env(project: Project) -> dict[str, str]:
    return project.env(
        **{KEY_VAR: PROVIDER_KEY, "GITHUB_TOKEN": TOKEN, "SHORT_TOKEN": SHORT, "TERM": "dumb"}
    )


def run(
    project: Project, *args: str, extra: Mapping[str, str] | None = None
) -> tuple[int, str, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "reasonix", *args],
        cwd=project.root,
        env={**env(project), **(extra or {})},
        capture_output=True,
        timeout=60,
        check=False,
        umask=0o022,
    )
    return proc.returncode, proc.stdout.decode(), proc.stderr.decode()


def leaking_turn(project: Project) -> str:
    """A turn where a file, bash and the model all carry the secrets; returns the session id."""
    (project.root / "token.txt").write_text(f"token={TOKEN}\nlookalike={LOOKALIKE}\n")
    (project.root / "key.txt").write_text(f"key={PROVIDER_KEY}\nshort={SHORT}\n")
    project.ex.push(
        Reply.calls(
            ("bash", {"command": "cat token.txt"}),
            ("read_file", {"path": "key.txt"}),
        ),
        Reply.text(f"The token is {TOKEN}, the key {PROVIDER_KEY}, also {LOOKALIKE} {SHORT}."),
    )
    code, out, err = run(project, "run", "--yes", "--output-format", "stream-json", "look")
    assert code == 0, err
    for text in (out, err):
        assert TOKEN not in text and PROVIDER_KEY not in text
    assert LOOKALIKE in out and SHORT in out  # control: the same shape, unknown, is kept
    assert "[redacted $GITHUB_TOKEN]" in out
    return str(json_lines(out)[-1]["session_id"])


def store_bytes(project: Project) -> bytes:
    return b"".join(p.read_bytes() for p in project.data.glob("sessions.db*") if p.is_file())


def test_tool_output_is_redacted_where_it_enters_the_session(project: Project) -> None:
    leaking_turn(project)
    tools = [m for m in project.ex.requests[1].messages if m["role"] == "tool"]
    sent = "\n".join(t["content"] for t in tools)
    assert TOKEN not in sent and PROVIDER_KEY not in sent
    assert "[redacted $GITHUB_TOKEN]" in sent and f"[redacted ${KEY_VAR}]" in sent
    assert LOOKALIKE in sent and f"short={SHORT}" in sent  # controls


def test_store_show_and_export_hold_no_secret(project: Project, tmp_path: Path) -> None:
    session = leaking_turn(project)
    raw = store_bytes(project)
    assert TOKEN.encode() not in raw and PROVIDER_KEY.encode() not in raw
    assert LOOKALIKE.encode() in raw  # control: the probe reads the transcript's bytes

    for args in (
        ("sessions", "show", session),
        ("sessions", "export", session),
        ("sessions", "export", session, "--format", "markdown"),
    ):
        code, out, err = run(project, *args)
        assert code == 0, err
        assert TOKEN not in out and PROVIDER_KEY not in out, args
        assert LOOKALIKE in out, args
    target = tmp_path / "export.json"
    code, _, err = run(project, "sessions", "export", session, "-o", str(target))
    assert code == 0, err
    text = target.read_text()
    assert TOKEN not in text and LOOKALIKE in text
    json.loads(text)  # redaction kept it valid JSON
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_text_output_is_redacted(project: Project) -> None:
    project.ex.push(Reply.text(f"echo: {TOKEN} and {LOOKALIKE}"))
    code, out, err = run(project, "run", "say it")
    assert code == 0, err
    assert TOKEN not in out and "[redacted $GITHUB_TOKEN]" in out and LOOKALIKE in out


def test_a_secret_already_in_an_old_store_is_redacted_on_the_way_out(project: Project) -> None:
    # Stored by a process that did not know the value as a secret...
    project.ex.push(Reply.text(f"old answer {TOKEN}"))
    blank = {"GITHUB_TOKEN": ""}
    code, out, err = run(project, "run", "--output-format", "json", "hi", extra=blank)
    assert code == 0, err
    session = json_lines(out)[0]["session_id"]
    assert TOKEN.encode() in store_bytes(project)  # control: it is there at rest
    # ...and shown by one that does.
    code, out, err = run(project, "sessions", "show", session)
    assert code == 0, err
    assert TOKEN not in out and "[redacted $GITHUB_TOKEN]" in out


def test_store_folder_and_files_are_private(project: Project) -> None:
    # An older version left them readable by everyone: they are tightened on open.
    project.data.mkdir(mode=0o755)
    os.chmod(project.data, 0o755)
    server = project.root / "srv.py"
    server.write_text("import sys\nsys.stderr.write('boom\\n')\nsys.exit(1)\n")
    add_user_config(
        project,
        f'[[mcp.servers]]\nname = "srv"\ncommand = {json.dumps(sys.executable)}\n'
        f"args = [{json.dumps(str(server))}]\n",
    )
    project.ex.push(
        Reply.call("write_file", {"path": "made.txt", "content": "hello\n"}), Reply.text("ok")
    )
    code, _, err = run(project, "run", "--yes", "make a file")
    assert code == 0, err
    assert stat.S_IMODE(project.data.stat().st_mode) == 0o700
    # (Checkpoints keep their own private store; the 0700 folder above already closes it.)
    ours = [p for p in project.data.rglob("*") if "checkpoints" not in p.parts]
    files = [p for p in ours if p.is_file()]
    assert {"sessions.db", "srv.log"} <= {p.name for p in files}
    for path in files:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    for path in (p for p in ours if p.is_dir()):
        assert stat.S_IMODE(path.stat().st_mode) == 0o700, path
    # Control: what the model writes in the workspace keeps the user's umask (0644).
    assert stat.S_IMODE((project.root / "made.txt").stat().st_mode) == 0o644


def test_journal_files_of_an_open_store_are_private(project: Project) -> None:
    # The WAL and shared-memory files exist while a session is open: look during a turn.
    project.ex.push(Reply.failing(Fault(stall_seconds=30)))
    proc = subprocess.Popen(
        [sys.executable, "-m", "reasonix", "run", "wait"],
        cwd=project.root,
        env=env(project),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        umask=0o022,
    )
    try:
        deadline = time.monotonic() + 60
        while not project.ex.requests and time.monotonic() < deadline:
            time.sleep(0.05)
        assert project.ex.requests, "the request never arrived"
        journal = [project.data / "sessions.db-wal", project.data / "sessions.db-shm"]
        assert all(p.exists() for p in journal)
        for path in journal:
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    finally:
        proc.kill()
        proc.wait(timeout=30)


def test_reasonix_config_masks_header_and_env_values(project: Project) -> None:
    toml = (project.root / "reasonix.toml").read_text()
    toml = toml.replace(
        'name = "fake-executor"\n',
        'name = "fake-executor"\nheaders = { Authorization = "Bearer hdr-0123456789abcdef", '
        '"X-Trace" = "visible-or-not" }\n',
    )
    toml += (
        '\n[[mcp.servers]]\nname = "tool"\ncommand = "true"\n'
        'env = { SERVICE_PASSWORD = "pw-0123456789abcdef" }\n'
    )
    (project.root / "reasonix.toml").write_text(toml)
    code, out, err = run(project, "config")
    assert code == 0, err
    assert "hdr-0123456789abcdef" not in out and "pw-0123456789abcdef" not in out
    assert "visible-or-not" not in out  # every header value is masked, not only known names
    assert "Authorization" in out and "<hidden, 27 chars>" in out
    assert project.ex.base_url in out  # control: ordinary values are shown
    assert TOKEN not in out and PROVIDER_KEY not in out
