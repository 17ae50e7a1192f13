"""``reasonix serve`` is for its user alone: each check tried from outside, with httpx against
the real server started as a subprocess (``python -m reasonix serve --port 0``). Every refusal
has its control beside it (the same request with the right credentials gets through), so a
probe that could not see a break would fail."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from reasonix.messages import UserMessage
from reasonix.store import SessionStore
from reasonix.testing import FakeDeepSeekServer, Reply
from tests.support.project import Project
from tests.support.web import Served, serve

pytestmark = pytest.mark.slow

TIMEOUT = httpx.Timeout(30.0)


@pytest.fixture(scope="module")
def proj(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Project]:
    tmp = tmp_path_factory.mktemp("web")
    root = tmp / "proj"
    root.mkdir()
    with FakeDeepSeekServer() as ex, FakeDeepSeekServer() as pl:
        p = Project(root, tmp / "data", tmp / "cfg", ex, pl)
        p.config_dir.mkdir()
        p.write_toml()
        yield p


@pytest.fixture(scope="module")
def served(proj: Project) -> Iterator[Served]:
    with serve(proj) as s:
        yield s


_OPEN: list[httpx.Client] = []


@pytest.fixture(autouse=True)
def _close_clients() -> Iterator[None]:
    yield
    while _OPEN:
        _OPEN.pop().close()


def client(s: Served, **headers: str) -> httpx.Client:
    c = httpx.Client(base_url=s.base, timeout=TIMEOUT, headers={"Origin": s.base, **headers})
    _OPEN.append(c)
    return c


def logged_in(s: Served) -> tuple[httpx.Client, str]:
    """A client holding the session cookie, and its CSRF token."""
    c = client(s)
    r = c.post("/api/auth", json={"token": s.token})
    assert r.status_code == 200, r.text
    return c, r.json()["csrf"]


def test_the_url_line_is_all_stdout_and_the_token_is_fresh(proj: Project, served: Served) -> None:
    assert served.url.startswith(f"http://127.0.0.1:{served.port}/#token=")
    assert len(served.token) >= 40
    with serve(proj) as other:
        assert other.token != served.token
        assert other.port != served.port
    assert other.process.returncode == 0  # Ctrl+C ends it cleanly
    assert other.stdout_lines == [other.url]  # one line, nothing else, to the end
    # the token is never written anywhere but that line
    assert served.token not in served.stderr()


def test_no_token_no_data(served: Served) -> None:
    anonymous = client(served)
    for path in ("/api/me", "/api/sessions", "/api/sessions/x/events", "/api/sessions/x"):
        r = anonymous.get(path)
        assert r.status_code == 401, (path, r.status_code)
        assert "open the URL" in r.json()["error"]
    r = anonymous.post("/api/sessions", json={"text": "hi"})
    assert r.status_code == 401
    # control: with the cookie the same reads succeed
    c, _ = logged_in(served)
    assert c.get("/api/sessions").status_code == 200
    assert c.get("/api/me").status_code == 200


def test_a_wrong_token_is_refused_and_sets_no_cookie(served: Served) -> None:
    c = client(served)
    wrong = served.token[:-2] + ("AA" if not served.token.endswith("AA") else "BB")
    r = c.post("/api/auth", json={"token": wrong})
    assert r.status_code == 401
    assert "set-cookie" not in r.headers
    assert c.post("/api/auth", json={}).status_code == 401
    assert c.post("/api/auth", json={"password": "guess"}).status_code == 401  # no password set
    assert c.get("/api/sessions").status_code == 401
    # a forged cookie is no better
    forged = client(served, Cookie=f"reasonix_{served.port}=not-a-session")
    assert forged.get("/api/sessions").status_code == 401


def test_cookie_flags(served: Served) -> None:
    r = client(served).post("/api/auth", json={"token": served.token})
    assert r.status_code == 200
    cookie = r.headers["set-cookie"]
    name, _, rest = cookie.partition("=")
    # named by port: cookies are not separated by port, two dashboards must not collide
    assert name == f"reasonix_{served.port}"
    flags = {f.strip().lower() for f in rest.split(";")[1:]}
    assert {"httponly", "samesite=strict", "path=/"} <= flags
    assert "csrf" in r.json() and r.json()["csrf"] not in cookie


def test_foreign_host_headers_are_refused(served: Served) -> None:
    c, _csrf = logged_in(served)
    for host in (
        f"attacker.example:{served.port}",  # DNS rebinding: the attacker's name, our address
        f"127.0.0.1.attacker.example:{served.port}",
        f"localhost:{served.port + 1}",
        "127.0.0.1",
        "",
    ):
        r = c.get("/api/sessions", headers={"Host": host})
        assert r.status_code == 400, (host, r.status_code)
        r = c.post("/api/auth", json={"token": served.token}, headers={"Host": host})
        assert r.status_code == 400, host
        assert c.get("/", headers={"Host": host}).status_code == 400
    # control: every loopback spelling with our port is fine
    for host in (f"127.0.0.1:{served.port}", f"localhost:{served.port}"):
        assert c.get("/api/sessions", headers={"Host": host}).status_code == 200, host


def test_foreign_origin_and_cross_site_requests_are_refused(served: Served) -> None:
    c, csrf = logged_in(served)
    for origin in ("http://attacker.example", f"http://localhost:{served.port + 1}", "null"):
        r = c.post("/api/auth", json={"token": served.token}, headers={"Origin": origin})
        assert r.status_code == 403, origin
        r = c.post("/api/sessions/x/interrupt", headers={"Origin": origin, "X-CSRF-Token": csrf})
        assert r.status_code == 403, origin
    bare = httpx.Client(base_url=served.base, timeout=TIMEOUT, cookies=c.cookies)
    _OPEN.append(bare)
    r = bare.post("/api/sessions/x/interrupt", headers={"X-CSRF-Token": csrf})
    assert r.status_code == 403  # no Origin at all
    r = c.post(
        "/api/sessions/x/interrupt",
        headers={"X-CSRF-Token": csrf, "Sec-Fetch-Site": "cross-site"},
    )
    assert r.status_code == 403
    # control: our own origin passes the guard (the session is unknown: 404 from the app)
    r = c.post("/api/sessions/x/interrupt", headers={"X-CSRF-Token": csrf})
    assert r.status_code == 404


def test_a_state_change_needs_the_csrf_token(served: Served) -> None:
    c, csrf = logged_in(served)
    r = c.post("/api/sessions", json={})
    assert r.status_code == 403
    assert "CSRF" in r.json()["error"]
    r = c.post("/api/sessions", json={}, headers={"X-CSRF-Token": csrf[:-1] + "x"})
    assert r.status_code == 403
    _other, other_csrf = logged_in(served)
    r = c.post("/api/sessions", json={}, headers={"X-CSRF-Token": other_csrf})
    assert r.status_code == 403  # another browser session's token
    # control
    r = c.post("/api/sessions", json={}, headers={"X-CSRF-Token": csrf})
    assert r.status_code == 200, r.text
    assert r.json()["id"]


def test_headers_csp_no_framing_no_cors(served: Served) -> None:
    c, _ = logged_in(served)
    evil = {"Origin": "http://attacker.example"}
    responses = [
        c.get("/", headers=evil),
        c.get("/static/app.js", headers=evil),
        c.get("/api/sessions", headers=evil),
        c.options("/api/sessions", headers={**evil, "Access-Control-Request-Method": "POST"}),
        client(served).get("/api/sessions"),
    ]
    for r in responses:
        csp = r.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "'unsafe-inline'" not in csp
        assert "frame-ancestors 'none'" in csp and "default-src 'none'" in csp
        assert r.headers["x-frame-options"] == "DENY"
        assert r.headers["x-content-type-options"] == "nosniff"
        assert not [h for h in r.headers if h.lower().startswith("access-control-")]
    assert responses[3].status_code in (403, 405)
    page = responses[0].text
    assert "<script src=" in page and "<script>" not in page and "style=" not in page
    assert "<style" not in page
    # data answers are not cached
    assert responses[2].headers["cache-control"] == "no-store"


def test_failed_logins_are_limited(proj: Project) -> None:
    with serve(proj) as s:
        c = client(s)
        for _ in range(10):
            assert c.post("/api/auth", json={"token": "wrong"}).status_code == 401
        r = c.post("/api/auth", json={"token": "wrong"})
        assert r.status_code == 429
        assert int(r.headers["retry-after"]) >= 1
        # locked out even with the right token until the window passes
        assert c.post("/api/auth", json={"token": s.token}).status_code == 429


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_network_bind_needs_a_password(proj: Project) -> None:
    r = proj.run("serve", "--host", "0.0.0.0", "--port", "0")
    assert r.returncode == 2
    assert r.stdout == ""
    assert "not a loopback address" in r.stderr and "--password-env" in r.stderr
    r = proj.run("serve", "--host", "0.0.0.0", "--port", "0", "--password-env", "DASH_PW")
    assert r.returncode == 2
    assert "DASH_PW" in r.stderr and "not set" in r.stderr
    # control: a loopback bind needs none (and binds; checked by the fixture's server)


def test_with_a_password_it_binds_warns_and_accepts_the_password(proj: Project) -> None:
    env = proj.env(DASH_PW="correct horse battery staple")
    with serve(proj, "--host", "0.0.0.0", "--password-env", "DASH_PW", env=env) as s:
        assert s.url.startswith("http://127.0.0.1:")
        assert "WARNING" in s.stderr() and "network" in s.stderr()
        c = client(s)
        assert c.post("/api/auth", json={"password": "wrong"}).status_code == 401
        r = c.post("/api/auth", json={"password": "correct horse battery staple"})
        assert r.status_code == 200
        assert c.get("/api/sessions").status_code == 200
        assert "correct horse" not in s.stderr()


def test_the_password_variable_can_come_from_the_users_config(
    proj: Project, tmp_path: Path
) -> None:
    proj.write_user_config('[serve]\npassword_env = "MY_DASH_PW"\n')
    try:
        r = proj.run("serve", "--host", "0.0.0.0", "--port", str(free_port()))
        assert r.returncode == 2 and "[serve] password_env" in r.stderr
        env = proj.env(MY_DASH_PW="s3cret-s3cret")
        with serve(proj, "--host", "0.0.0.0", env=env) as s:
            c = client(s)
            assert c.post("/api/auth", json={"password": "s3cret-s3cret"}).status_code == 200
    finally:
        proj.write_user_config()


def test_a_project_file_cannot_set_the_password_variable(proj: Project) -> None:
    (proj.root / "reasonix.toml").write_text(
        (proj.root / "reasonix.toml").read_text() + '\n[serve]\npassword_env = "PATH"\n'
    )
    try:
        r = proj.run("serve", "--host", "0.0.0.0", "--port", "0")
        assert r.returncode == 2
        assert "not a loopback address" in r.stderr
    finally:
        proj.write_toml()


def test_the_event_stream_resumes_after_last_event_id(proj: Project, served: Served) -> None:
    c, csrf = logged_in(served)
    proj.ex.push(Reply.text("Resumed streams lose nothing."))
    sid = c.post("/api/sessions", json={"text": "say it"}, headers={"X-CSRF-Token": csrf}).json()[
        "id"
    ]

    def read(last: int | None) -> list[tuple[int, dict[str, object]]]:
        headers = {"Last-Event-ID": str(last)} if last is not None else {}
        out: list[tuple[int, dict[str, object]]] = []
        with c.stream("GET", f"/api/sessions/{sid}/events", headers=headers) as stream:
            assert stream.headers["content-type"].startswith("text/event-stream")
            number = 0
            for line in stream.iter_lines():
                if line.startswith("id: "):
                    number = int(line[4:])
                elif line.startswith("data: "):
                    data = json.loads(line[6:])
                    out.append((number, data))
                    if data["kind"] == "turn_outcome":
                        return out
        return out

    everything = read(None)
    ids = [n for n, _ in everything]
    assert ids == list(range(1, len(ids) + 1)), ids
    text = "".join(str(d["text"]) for _, d in everything if d["kind"] == "text_delta")
    assert text == "Resumed streams lose nothing."
    # a second tab sees the same events; a reconnect after id k gets exactly the rest
    assert read(None) == everything
    k = len(everything) // 2
    assert read(k) == everything[k:]


def test_a_session_held_by_another_process_is_read_only(proj: Project, served: Served) -> None:
    c, csrf = logged_in(served)
    store = SessionStore(proj.data / "sessions.db")
    try:
        sid = store.create_session(proj.root, "held elsewhere")
        assert store.claim(sid)
        info = c.get(f"/api/sessions/{sid}").json()
        assert info["writable"] is False and "read-only" in info["read_only_reason"]
        assert info["state"] == "in use elsewhere"
        r = c.post(
            f"/api/sessions/{sid}/messages", json={"text": "hi"}, headers={"X-CSRF-Token": csrf}
        )
        assert r.status_code == 409
        assert "another reasonix process" in r.json()["error"]
        # control: once released, the page may write to it
        store.release(sid)
        proj.ex.push(Reply.text("Now it is mine."))
        r = c.post(
            f"/api/sessions/{sid}/messages", json={"text": "hi"}, headers={"X-CSRF-Token": csrf}
        )
        assert r.status_code == 200, r.text
        assert store.in_use(sid)  # the dashboard holds it now
    finally:
        store.close()


def test_sessions_of_other_folders_need_all(proj: Project, served: Served, tmp_path: Path) -> None:
    c, _ = logged_in(served)
    store = SessionStore(proj.data / "sessions.db")
    try:
        elsewhere = tmp_path / "other"
        elsewhere.mkdir()
        sid = store.create_session(elsewhere, "another folder's")
        store.append_message(sid, "executor", 0, UserMessage("a turn there"))
    finally:
        store.close()
    assert sid not in [s["id"] for s in c.get("/api/sessions").json()["sessions"]]
    assert c.get(f"/api/sessions/{sid}").status_code == 404
    with serve(proj, "--all") as s:
        every, _ = logged_in(s)
        listed = [x["id"] for x in every.get("/api/sessions").json()["sessions"]]
        assert sid in listed
        assert every.get(f"/api/sessions/{sid}").status_code == 200


def test_serve_is_listed_in_help() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "reasonix", "serve", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0
    assert "--password-env" in out.stdout and "--all" in out.stdout


def test_an_oversized_body_is_refused_before_login(served: Served) -> None:
    c = client(served)
    r = c.post("/api/auth", content=b'{"token": "' + b"x" * 2_000_000 + b'"}')
    assert r.status_code == 413
    # control: a normal login still works
    assert c.post("/api/auth", json={"token": served.token}).status_code == 200


def test_mode_and_interrupt_go_through_the_facade(proj: Project, served: Served) -> None:
    c, csrf = logged_in(served)
    h = {"X-CSRF-Token": csrf}
    sid = c.post("/api/sessions", json={}, headers=h).json()["id"]
    assert c.get(f"/api/sessions/{sid}").json()["mode"] == "ask"
    r = c.post(f"/api/sessions/{sid}/mode", json={"mode": "auto-edit"}, headers=h)
    assert r.status_code == 200 and r.json() == {"mode": "auto-edit"}
    assert c.get(f"/api/sessions/{sid}").json()["mode"] == "auto-edit"
    r = c.post(f"/api/sessions/{sid}/mode", json={"mode": "everything"}, headers=h)
    assert r.status_code == 400 and "everything" in r.json()["error"]
    r = c.post(f"/api/sessions/{sid}/interrupt", headers=h)
    assert r.json() == {"interrupted": False}  # no turn runs
    r = c.post(f"/api/sessions/{sid}/messages", json={"text": "  "}, headers=h)
    assert r.status_code == 400
    r = c.post(f"/api/sessions/{sid}/approvals/approval-9", json={"choice": "deny"}, headers=h)
    assert r.status_code == 409 and "no approval" in r.json()["error"]


def test_the_list_hides_sessions_in_which_no_turn_ran(proj: Project, served: Served) -> None:
    """The store's rule (the one ``-c`` uses) holds in the dashboard too: a session opened here
    but never sent a message is not listed; one in which a turn ran is."""
    c, csrf = logged_in(served)
    r = c.post("/api/sessions", json={}, headers={"X-CSRF-Token": csrf})
    assert r.status_code == 200, r.text
    empty = r.json()["id"]
    assert c.get(f"/api/sessions/{empty}").status_code == 200  # it exists and is open here
    store = SessionStore(proj.data / "sessions.db")
    try:
        used = store.create_session(proj.root, "one turn")
        store.append_message(used, "executor", 0, UserMessage("a turn ran here"))
    finally:
        store.close()
    listed = [s["id"] for s in c.get("/api/sessions").json()["sessions"]]
    assert used in listed
    assert empty not in listed
