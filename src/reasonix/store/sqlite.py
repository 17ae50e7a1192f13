"""Session persistence in one SQLite file (stdlib ``sqlite3``, WAL journal).

Durability: every append is its own short transaction, committed before the call returns, so a
process killed at any moment loses at most the message it was still streaming. The journal is WAL
with ``synchronous=NORMAL``: a committed transaction survives the process being killed (the WAL
is in the OS page cache and is replayed on the next open); only a power loss or kernel crash can
roll back the last few commits, and even then the file stays consistent. ``FULL`` would add an
fsync per message for that case alone, which is not worth it on every tool step.

Appends are idempotent on ``(session, agent, seq)``: a resumed writer that re-sends a message it
already stored changes nothing, and re-sending a *different* message at a stored seq is refused
(call :meth:`SessionStore.truncate_messages` first, as a rewind does).

Threads: a store owns one connection. Calls are serialised with a lock, so it may be shared by
threads of one process, but one store per thread is the simplest and fastest. Several processes
may open the same file; writers wait up to ``timeout`` seconds for each other.

Sessions in use: a writer claims the session it continues (:meth:`SessionStore.claim`, an OS
file lock in ``locks/`` next to the database, released by :meth:`~SessionStore.release`, by
:meth:`~SessionStore.close` or by the process ending, even killed), so two reasonix processes
never append to one session; :meth:`~SessionStore.latest_session` skips claimed sessions.

It runs past 500 lines because the store is one class over one connection: every method takes
the same lock and transaction, translates SQLite's errors the same way and keeps the same
idempotence rules, and the session claims share its lifetime. Exports read through the same
connection for the same reason.
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
import sys
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reasonix.errors import SessionStoreError
from reasonix.redaction import redact, redact_value
from reasonix.store.private import private_dir, private_file, tighten_existing

if TYPE_CHECKING:
    # The interactive prompt opens the store before it is drawn; the message and event types
    # (about 40 dataclasses) load with the session, after it: each method that reads or writes
    # them imports them.
    from reasonix.events import Event, UsageSource
    from reasonix.messages import Message, Usage

DATA_DIR_ENV = "REASONIX_DATA_DIR"
DB_FILE = "sessions.db"
SCHEMA_VERSION = 2
AGENTS = ("executor", "planner")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    workspace TEXT NOT NULL,
    title TEXT,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    activity INTEGER NOT NULL,          -- store-wide counter: orders sessions without clock ties
    executor_model TEXT,
    planner_model TEXT,
    status TEXT NOT NULL DEFAULT 'active',
    meta TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX IF NOT EXISTS sessions_by_workspace ON sessions (workspace, activity);
CREATE INDEX IF NOT EXISTS sessions_by_activity ON sessions (activity);
CREATE TABLE IF NOT EXISTS messages (
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    agent TEXT NOT NULL,
    seq INTEGER NOT NULL,
    data TEXT NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (session_id, agent, seq)
) WITHOUT ROWID;
-- Messages a rewrite (compaction, rewind, planner rollback) removed from the live session: the
-- full transcript stays in the store. (Added in schema 2.)
CREATE TABLE IF NOT EXISTS archived_messages (
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    agent TEXT NOT NULL,
    seq INTEGER NOT NULL,
    data TEXT NOT NULL,
    created_at REAL NOT NULL,
    archived_at REAL NOT NULL,
    reason TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS archived_by_session ON archived_messages (session_id, agent);
CREATE TABLE IF NOT EXISTS events (
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    kind TEXT NOT NULL,
    data TEXT NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS usage (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    source TEXT NOT NULL,
    model TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    cache_hit_tokens INTEGER NOT NULL,
    cache_miss_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    reasoning_tokens INTEGER NOT NULL,
    cost REAL NOT NULL,
    ts REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS usage_by_session ON usage (session_id);
"""


def default_store_path(environ: Mapping[str, str] | None = None) -> Path:
    """``$REASONIX_DATA_DIR/sessions.db``, else the platform's user data folder."""
    env = os.environ if environ is None else environ
    folder = env.get(DATA_DIR_ENV)
    if not folder:
        import platformdirs

        folder = platformdirs.user_data_dir("reasonix")
    return Path(folder) / DB_FILE


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """One row of the sessions table, plus message counts per agent."""

    id: str
    workspace: str
    title: str | None
    created_at: float
    updated_at: float
    executor_model: str | None
    planner_model: str | None
    status: str
    meta: Mapping[str, Any]
    message_counts: Mapping[str, int]

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "workspace": self.workspace,
            "title": self.title,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "executor_model": self.executor_model,
            "planner_model": self.planner_model,
            "status": self.status,
            "meta": dict(self.meta),
            "message_counts": dict(self.message_counts),
        }


@dataclass(frozen=True, slots=True)
class UsageTotal:
    """Summed usage of one source (executor, planner, ...) in a session."""

    usage: Usage
    cost: float
    requests: int
    #: our estimate of the images' share of ``usage.prompt_tokens`` (DeepSeek reports none)
    image_tokens: int = 0

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "usage": self.usage.to_dict(),
            "cost": self.cost,
            "requests": self.requests,
        }
        if self.image_tokens:
            out["image_tokens_estimated"] = self.image_tokens
        return out


def _storable(text: str) -> str:
    """``text`` without lone surrogates (Python's stand-ins for undecodable bytes in paths,
    arguments and output), which SQLite's UTF-8 text refuses: such bytes become ``\\xNN``."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _workspace_key(workspace: str | os.PathLike[str]) -> str:
    """Sessions are filed under the resolved absolute workspace path."""
    return _storable(str(Path(workspace).expanduser().resolve()))


def _dump(value: Any) -> str:
    # ensure_ascii keeps lone surrogates (from undecodable tool output) storable in SQLite's
    # UTF-8 text and still restores the exact same Python string.
    return json.dumps(value, ensure_ascii=True, separators=(",", ":"), default=str)


def _new_session_id() -> str:
    now = datetime.now(UTC)
    return now.strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(2)


class SessionStore:
    """Sessions, their per-agent messages, events and usage in one SQLite database.

    ``SessionStore()`` opens :func:`default_store_path`; pass ``path`` to choose the file.
    Use it as a context manager or call :meth:`close`. Raises :class:`SessionStoreError`.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, *, timeout: float = 5.0):
        self.path = Path(path) if path is not None else default_store_path()
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self._claims: dict[str, int] = {}  # session id -> fd of its held lock file
        try:
            # The store holds everything the agent saw: only the user may read it.
            private_dir(self.path.parent)
            private_file(self.path)
        except OSError as exc:
            raise SessionStoreError(
                f"cannot create the session folder {self.path.parent}: {exc.strerror or exc}. "
                f"Make it writable, or set {DATA_DIR_ENV} to a writable folder."
            ) from exc
        try:
            # isolation_level=None: we issue BEGIN/COMMIT ourselves, one transaction per append.
            conn = sqlite3.connect(
                self.path, timeout=timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise self._translate(exc, "open") from exc
        self._conn = conn
        try:
            conn.execute("PRAGMA foreign_keys = ON")
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                # Some network filesystems refuse WAL; the rollback journal is still safe.
                conn.execute("PRAGMA synchronous = FULL")
            else:
                conn.execute("PRAGMA synchronous = NORMAL")
            for suffix in ("-wal", "-shm", "-journal"):
                tighten_existing(self.path.with_name(self.path.name + suffix))
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise SessionStoreError(
                    f"the session database {self.path} was written by a newer reasonix "
                    f"(schema {version}, this one knows {SCHEMA_VERSION}); upgrade reasonix or "
                    f"set {DATA_DIR_ENV} to another folder."
                )
            if version < SCHEMA_VERSION:
                conn.executescript(
                    f"BEGIN IMMEDIATE;{_SCHEMA}PRAGMA user_version = {SCHEMA_VERSION};COMMIT;"
                )
        except SessionStoreError:
            self.close()
            raise
        except sqlite3.Error as exc:
            self.close()
            raise self._translate(exc, "open") from exc

    # -- plumbing ----------

    def _translate(self, exc: sqlite3.Error, action: str) -> SessionStoreError:
        text = str(exc)
        lower = text.lower()
        if "locked" in lower or "busy" in lower:
            hint = (
                "another process holds a lock on it; wait for it to finish or close the other "
                "reasonix, then retry"
            )
        elif "not a database" in lower or "malformed" in lower or "corrupt" in lower:
            hint = (
                f"the file is damaged; move it aside (e.g. rename it to {self.path.name}.corrupt) "
                "and reasonix will start a fresh database"
            )
        elif "readonly" in lower or "unable to open" in lower or "disk i/o" in lower:
            hint = (
                f"check that {self.path.parent} is writable and has free space, or set "
                f"{DATA_DIR_ENV} to another folder"
            )
        elif "foreign key" in lower:
            hint = "the session does not exist; create it with create_session() first"
        elif "full" in lower:
            hint = "the disk is full; free some space"
        else:
            hint = "see the SQLite message above"
        return SessionStoreError(f"session store {self.path}: cannot {action}: {text}; {hint}.")

    @property
    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            raise SessionStoreError(f"session store {self.path} is closed")
        return self._conn

    @contextmanager
    def _op(self, action: str) -> Iterator[sqlite3.Connection]:
        """One public operation: locked, sqlite errors turned into SessionStoreError."""
        with self._lock:
            conn = self._db
            try:
                yield conn
            except sqlite3.Error as exc:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise self._translate(exc, action) from exc
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

    def _touch(self, conn: sqlite3.Connection, session_id: str) -> None:
        cur = conn.execute(
            "UPDATE sessions SET updated_at = ?, "
            "activity = (SELECT COALESCE(MAX(activity), 0) + 1 FROM sessions) WHERE id = ?",
            (time.time(), session_id),
        )
        if cur.rowcount == 0:
            raise SessionStoreError(f"no session {session_id!r} in {self.path}")

    def close(self) -> None:
        """Close the connection and release the claims (idempotent)."""
        with self._lock:
            for session_id in list(self._claims):
                self.release(session_id)
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    # -- sessions in use ----------

    def _lock_path(self, session_id: str) -> Path:
        if not session_id or "/" in session_id or "\\" in session_id or session_id[0] == ".":
            raise SessionStoreError(f"not a session id: {session_id!r}")
        return self.path.parent / "locks" / f"{session_id}.lock"

    def _try_lock(self, session_id: str) -> int | None:
        """An fd holding the session's lock file, or None when someone else holds it."""
        path = self._lock_path(session_id)
        try:
            private_dir(path.parent)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise SessionStoreError(
                f"cannot create the lock file {path}: {exc.strerror or exc}. Make "
                f"{path.parent} writable, or set {DATA_DIR_ENV} to a writable folder."
            ) from exc
        if _lock_fd(fd):
            return fd
        os.close(fd)
        return None

    def claim(self, session_id: str) -> bool:
        """Mark ``session_id`` as being written by this store until :meth:`release` (or
        :meth:`close`, or the process ending). False when another store, in this process or
        another, has claimed it. Claiming a session this store holds is a no-op."""
        with self._lock:
            if session_id in self._claims:
                return True
            fd = self._try_lock(session_id)
            if fd is None:
                return False
            self._claims[session_id] = fd
            return True

    def release(self, session_id: str) -> None:
        """Give up the claim on ``session_id`` (no-op when not held)."""
        with self._lock:
            fd = self._claims.pop(session_id, None)
            if fd is not None:
                _unlock_fd(fd)
                os.close(fd)

    def in_use(self, session_id: str) -> bool:
        """True when another store (in this process or another) has claimed the session."""
        with self._lock:
            if session_id in self._claims:
                return False
            fd = self._try_lock(session_id)
            if fd is None:
                return True
            _unlock_fd(fd)
            os.close(fd)
            return False

    def __enter__(self) -> SessionStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- sessions ----------

    def create_session(
        self,
        workspace: str | os.PathLike[str],
        title: str | None = None,
        meta: Mapping[str, Any] | None = None,
        *,
        executor_model: str | None = None,
        planner_model: str | None = None,
    ) -> str:
        """Create a session and return its id (``YYYYMMDD-HHMMSS-xxxx``, UTC, sorts by time)."""
        now = time.time()
        with self._op("create a session") as conn:
            for _ in range(20):
                session_id = _new_session_id()
                try:
                    conn.execute(
                        "INSERT INTO sessions (id, workspace, title, created_at, updated_at, "
                        "activity, executor_model, planner_model, meta, status) VALUES (?, ?, ?, "
                        "?, ?, (SELECT COALESCE(MAX(activity), 0) + 1 FROM sessions), ?, ?, ?, "
                        "'new')",
                        (
                            session_id,
                            _workspace_key(workspace),
                            None if title is None else _storable(title),
                            now,
                            now,
                            executor_model,
                            planner_model,
                            _dump(dict(meta or {})),
                        ),
                    )
                except sqlite3.IntegrityError:
                    continue  # same second, same random suffix: draw again
                return session_id
        raise SessionStoreError("could not allocate a unique session id; retry")

    def get_session(self, session_id: str) -> SessionInfo | None:
        """The session's row, or None if there is no such session."""
        with self._op("read a session") as conn:
            row = conn.execute(_SESSION_SELECT + " WHERE id = ?", (session_id,)).fetchone()
            info = _session_info(conn, row) if row else None
        return self._with_status(info) if info is not None else None

    def list_sessions(
        self,
        workspace: str | os.PathLike[str] | None = None,
        limit: int = 20,
        *,
        include: Iterable[str] = (),
    ) -> list[SessionInfo]:
        """Most recently active first; only ``workspace``'s sessions when given. A session in
        which no turn ever ran (a launch that sent nothing) is not listed, unless its id is in
        ``include`` (the one a frontend has open)."""
        shown = list(include)
        marks = ",".join("?" * len(shown))
        keep = f"({_HAS_TURN} OR id IN ({marks}))" if shown else _HAS_TURN
        with self._op("list sessions") as conn:
            if workspace is None:
                rows = conn.execute(
                    _SESSION_SELECT + f" WHERE {keep} ORDER BY activity DESC LIMIT ?",
                    (*shown, limit),
                ).fetchall()
            else:
                rows = conn.execute(
                    _SESSION_SELECT
                    + f" WHERE workspace = ? AND {keep} ORDER BY activity DESC LIMIT ?",
                    (_workspace_key(workspace), *shown, limit),
                ).fetchall()
            infos = [_session_info(conn, r) for r in rows]
        return [self._with_status(info) for info in infos]

    def latest_session(self, workspace: str | os.PathLike[str]) -> str | None:
        """Id of the most recently active session in ``workspace`` in which a turn ran and
        that no other store has claimed (for ``--continue``: never an empty launch, never the
        session another reasonix is writing to)."""
        with self._op("find the latest session") as conn:
            rows = conn.execute(
                f"SELECT id FROM sessions WHERE workspace = ? AND {_HAS_TURN} "
                "ORDER BY activity DESC LIMIT 50",
                (_workspace_key(workspace),),
            ).fetchall()
        for row in rows:
            if not self.in_use(str(row[0])):
                return str(row[0])
        return None

    def has_turn(self, session_id: str) -> bool:
        """Whether a turn ever ran in the session (it has messages or a turn mark)."""
        with self._op("read a session") as conn:
            row = conn.execute(
                f"SELECT 1 FROM sessions WHERE id = ? AND {_HAS_TURN}", (session_id,)
            ).fetchone()
        return row is not None

    def drop_if_empty(self, session_id: str) -> bool:
        """Delete the session if no turn ever ran in it (a launch that sent nothing is not
        kept); True when it was deleted."""
        with self._op("delete an empty session") as conn:
            cur = conn.execute(
                f"DELETE FROM sessions WHERE id = ? AND NOT {_HAS_TURN}", (session_id,)
            )
        return cur.rowcount > 0

    def _with_status(self, info: SessionInfo) -> SessionInfo:
        """``info`` with the status a user should see: one left ``running`` by a process that
        is gone was interrupted; the names of older releases read as today's."""
        status = _OLD_STATUS.get(info.status, info.status)
        if status == "running" and info.id not in self._claims and not self.in_use(info.id):
            status = "interrupted"
        return info if status == info.status else replace(info, status=status)

    def set_title(self, session_id: str, title: str) -> None:
        """Rename a session."""
        with self._op("set the title") as conn:
            cur = conn.execute(
                "UPDATE sessions SET title = ? WHERE id = ?", (_storable(redact(title)), session_id)
            )
            if cur.rowcount == 0:
                raise SessionStoreError(f"no session {session_id!r} in {self.path}")

    def set_status(self, session_id: str, status: str) -> None:
        """Mark a session: one of :data:`SESSION_STATUSES` (``running``, ``finished``,
        ``interrupted``, ``failed``, ``waiting``), or a caller's own word."""
        with self._op("set the status") as conn:
            cur = conn.execute("UPDATE sessions SET status = ? WHERE id = ?", (status, session_id))
            if cur.rowcount == 0:
                raise SessionStoreError(f"no session {session_id!r} in {self.path}")

    def delete_session(self, session_id: str) -> bool:
        """Delete a session with its messages, events and usage; False if it did not exist."""
        with self._op("delete a session") as conn:
            cur = conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
        return cur.rowcount > 0

    # -- messages ----------

    def append_message(self, session_id: str, agent: str, seq: int, message: Message) -> None:
        """Store ``message`` as position ``seq`` of ``agent``'s conversation, committed on return.

        Storing the same message at the same seq again is a no-op; a different one is refused.
        """
        from reasonix.messages import message_to_dict

        data = _dump(redact_value(message_to_dict(message)))
        with self._op("append a message") as conn:
            conn.execute("BEGIN IMMEDIATE")
            cur = conn.execute(
                "INSERT INTO messages (session_id, agent, seq, data, created_at) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (session_id, agent, seq, data, time.time()),
            )
            if cur.rowcount == 0:
                row = conn.execute(
                    "SELECT data FROM messages WHERE session_id = ? AND agent = ? AND seq = ?",
                    (session_id, agent, seq),
                ).fetchone()
                conn.execute("ROLLBACK")
                if row is not None and row[0] != data:
                    raise SessionStoreError(
                        f"session {session_id} already has a different {agent} message at seq "
                        f"{seq}; truncate_messages() before rewriting history"
                    )
                return
            self._touch(conn, session_id)
            conn.execute("COMMIT")

    def load_messages(self, session_id: str, agent: str) -> list[Message]:
        """``agent``'s messages in seq order, exactly as they were appended."""
        from reasonix.messages import message_from_dict

        with self._op("load messages") as conn:
            rows = conn.execute(
                "SELECT data FROM messages WHERE session_id = ? AND agent = ? ORDER BY seq",
                (session_id, agent),
            ).fetchall()
        return [message_from_dict(json.loads(r[0])) for r in rows]

    def message_count(self, session_id: str, agent: str) -> int:
        """How many messages ``agent`` has stored (the next seq when seqs start at 0)."""
        with self._op("count messages") as conn:
            row = conn.execute(
                "SELECT COUNT(*) FROM messages WHERE session_id = ? AND agent = ?",
                (session_id, agent),
            ).fetchone()
        return int(row[0])

    def truncate_messages(
        self, session_id: str, agent: str, keep: int, *, reason: str = "rewind"
    ) -> int:
        """Keep the first ``keep`` messages of ``agent`` (by seq); the rest leave the live
        session but are kept in ``archived_messages`` with ``reason``, so the full transcript
        survives compaction and rewind.

        Returns how many were removed from the live session.
        """
        if keep < 0:
            raise ValueError("keep must be >= 0")
        with self._op("truncate messages") as conn:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(
                "INSERT INTO archived_messages "
                "SELECT session_id, agent, seq, data, created_at, ?, ? FROM messages "
                "WHERE session_id = ? AND agent = ? AND seq NOT IN ("
                "SELECT seq FROM messages WHERE session_id = ? AND agent = ? "
                "ORDER BY seq LIMIT ?)",
                (time.time(), reason, session_id, agent, session_id, agent, keep),
            )
            cur = conn.execute(
                "DELETE FROM messages WHERE session_id = ? AND agent = ? AND seq NOT IN ("
                "SELECT seq FROM messages WHERE session_id = ? AND agent = ? "
                "ORDER BY seq LIMIT ?)",
                (session_id, agent, session_id, agent, keep),
            )
            deleted = cur.rowcount
            self._touch(conn, session_id)
            conn.execute("COMMIT")
        return deleted

    def load_archived(self, session_id: str, agent: str) -> list[tuple[str, Message]]:
        """Messages rewrites removed from ``agent``'s live session, oldest first, each with the
        reason it was archived."""
        from reasonix.messages import message_from_dict

        with self._op("load archived messages") as conn:
            rows = conn.execute(
                "SELECT reason, data FROM archived_messages WHERE session_id = ? AND agent = ? "
                "ORDER BY archived_at, seq",
                (session_id, agent),
            ).fetchall()
        return [(str(reason), message_from_dict(json.loads(data))) for reason, data in rows]

    # -- events and usage ----------

    def record_event(self, session_id: str, event: Event) -> int:
        """Append an event to the session's timeline; returns its seq (1, 2, ...)."""
        data = _dump(redact_value(event.to_dict()))
        with self._op("record an event") as conn:
            # BEGIN IMMEDIATE takes the write lock first, so two writers cannot pick the same seq.
            conn.execute("BEGIN IMMEDIATE")
            row = conn.execute(
                "SELECT COALESCE(MAX(seq), 0) + 1 FROM events WHERE session_id = ?", (session_id,)
            ).fetchone()
            seq = int(row[0])
            conn.execute(
                "INSERT INTO events (session_id, seq, kind, data, created_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (session_id, seq, event.kind, data, time.time()),
            )
            conn.execute("COMMIT")
        return seq

    def load_events(self, session_id: str) -> list[dict[str, Any]]:
        """The recorded events as their ``to_dict()`` forms, in order."""
        with self._op("load events") as conn:
            rows = conn.execute(
                "SELECT data FROM events WHERE session_id = ? ORDER BY seq", (session_id,)
            ).fetchall()
        return [json.loads(r[0]) for r in rows]

    def last_event(self, session_id: str, kind: str) -> dict[str, Any] | None:
        """The most recent recorded event of ``kind`` (its ``to_dict()`` form), or None."""
        with self._op("load events") as conn:
            row = conn.execute(
                "SELECT data FROM events WHERE session_id = ? AND kind = ? ORDER BY seq DESC "
                "LIMIT 1",
                (session_id, kind),
            ).fetchone()
        return json.loads(row[0]) if row else None

    def record_usage(
        self,
        session_id: str,
        source: UsageSource | str,
        model: str,
        usage: Usage,
        cost: float,
    ) -> None:
        """Record one request's token counts and cost (USD) under ``source``."""
        with self._op("record usage") as conn:
            conn.execute(
                "INSERT INTO usage (session_id, source, model, prompt_tokens, cache_hit_tokens, "
                "cache_miss_tokens, completion_tokens, reasoning_tokens, cost, ts) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    session_id,
                    str(source),
                    model,
                    usage.prompt_tokens,
                    usage.cache_hit_tokens,
                    usage.cache_miss_tokens,
                    usage.completion_tokens,
                    usage.reasoning_tokens,
                    cost,
                    time.time(),
                ),
            )

    def usage_summary(self, session_id: str) -> dict[str, UsageTotal]:
        """Totals per source (``executor``, ``planner``, ``compaction``, ...)."""
        with self._op("summarise usage") as conn:
            rows = conn.execute(
                "SELECT source, SUM(prompt_tokens), SUM(cache_hit_tokens), "
                "SUM(cache_miss_tokens), SUM(completion_tokens), SUM(reasoning_tokens), "
                "SUM(cost), COUNT(*) FROM usage WHERE session_id = ? GROUP BY source "
                "ORDER BY source",
                (session_id,),
            ).fetchall()
            # The images' share is an estimate each usage event carries (the usage table holds
            # the server's figures only): summed from the events, so no schema change.
            images = dict(
                conn.execute(
                    "SELECT json_extract(data, '$.source'), "
                    "SUM(COALESCE(json_extract(data, '$.image_tokens'), 0)) FROM events "
                    "WHERE session_id = ? AND kind = 'usage' GROUP BY 1",
                    (session_id,),
                ).fetchall()
            )
        from reasonix.messages import Usage

        return {
            str(r[0]): UsageTotal(
                Usage(int(r[1]), int(r[2]), int(r[3]), int(r[4]), int(r[5])),
                float(r[6]),
                int(r[7]),
                int(images.get(r[0]) or 0),
            )
            for r in rows
        }

    # -- maintenance and export ----------

    def integrity_check(self) -> bool:
        """True when ``PRAGMA integrity_check`` reports ``ok``."""
        with self._op("check integrity") as conn:
            rows = conn.execute("PRAGMA integrity_check").fetchall()
        return [r[0] for r in rows] == ["ok"]

    def export_json(self, session_id: str) -> dict[str, Any]:
        """The whole session as plain JSON-ready data."""
        from reasonix.messages import message_to_dict

        info = self.get_session(session_id)
        if info is None:
            raise SessionStoreError(f"no session {session_id!r} in {self.path}")
        with self._op("export") as conn:
            # An agent whose whole conversation was rewound or compacted away still has its
            # archived transcript.
            agents = [
                str(r[0])
                for r in conn.execute(
                    "SELECT agent FROM messages WHERE session_id = ? UNION "
                    "SELECT agent FROM archived_messages WHERE session_id = ?",
                    (session_id, session_id),
                )
            ]
        # Known secrets are redacted again on the way out: sessions stored before a secret was
        # known (or by an older version) must not hand it over either.
        exported: dict[str, Any] = redact_value(
            {
                "format": "reasonix-session",
                "version": 1,
                "session": info.to_dict(),
                "messages": {
                    agent: [message_to_dict(m) for m in self.load_messages(session_id, agent)]
                    for agent in sorted(agents, key=_agent_order)
                },
                "archived_messages": {
                    agent: [
                        {"reason": reason, **message_to_dict(m)}
                        for reason, m in self.load_archived(session_id, agent)
                    ]
                    for agent in sorted(agents, key=_agent_order)
                },
                "events": self.load_events(session_id),
                "usage": {k: v.to_dict() for k, v in self.usage_summary(session_id).items()},
            }
        )
        return exported

    def export_markdown(self, session_id: str) -> str:
        """A readable transcript: per agent, each message with reasoning and tool calls."""
        from reasonix.messages import message_from_dict

        data = self.export_json(session_id)
        info = data["session"]
        out = [f"# {info['title'] or 'Session ' + info['id']}", ""]
        out.append(f"- id: `{info['id']}`")
        out.append(f"- workspace: `{info['workspace']}`")
        created = datetime.fromtimestamp(info["created_at"], UTC).strftime("%Y-%m-%d %H:%M UTC")
        out.append(f"- created: {created}")
        for role in ("executor", "planner"):
            if info[f"{role}_model"]:
                out.append(f"- {role} model: `{info[f'{role}_model']}`")
        for source, total in data["usage"].items():
            u = total["usage"]
            out.append(
                f"- {source}: {total['requests']} requests, {u['prompt_tokens']} prompt tokens "
                f"({u['cache_hit_tokens']} cached), {u['completion_tokens']} output tokens, "
                f"${total['cost']:.4f}"
            )
        for agent, messages in data["messages"].items():
            out += ["", f"## {agent.capitalize()}"]
            for raw in messages:
                out += ["", *_markdown_message(message_from_dict(raw))]
            archived = data["archived_messages"].get(agent, [])
            if archived:
                out += ["", f"## {agent.capitalize()}: archived messages", ""]
                out.append(
                    "Removed from the live conversation by compaction or rewind, oldest first."
                )
                for raw in archived:
                    raw = dict(raw)
                    reason = raw.pop("reason")
                    lines = _markdown_message(message_from_dict(raw))
                    out += ["", f"{lines[0]} (archived: {reason})", *lines[1:]]
        return "\n".join(out) + "\n"


def _lock_fd(fd: int) -> bool:
    """Take an exclusive, non-blocking lock on ``fd``; False when it is held elsewhere."""
    try:
        if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
            import msvcrt

            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        else:
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True


def _unlock_fd(fd: int) -> None:
    try:
        if sys.platform == "win32":  # pragma: no cover
            import msvcrt

            os.lseek(fd, 0, os.SEEK_SET)
            msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
        else:
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_UN)
    except OSError:
        pass


#: A session in which a turn ran: it has messages, or a recorded turn mark.
_HAS_TURN = (
    "(EXISTS (SELECT 1 FROM messages WHERE messages.session_id = sessions.id) OR EXISTS "
    "(SELECT 1 FROM events WHERE events.session_id = sessions.id AND events.kind = 'turn_mark'))"
)

#: What a session's status says, as the session facade sets it. ``waiting``: for the user's
#: answer to a question or a plan's approval.
SESSION_STATUSES = ("new", "running", "finished", "interrupted", "failed", "waiting")

#: Statuses stored by older releases, read as today's (``active`` was set after every turn).
_OLD_STATUS = {"active": "finished", "error": "failed"}

_SESSION_SELECT = (
    "SELECT id, workspace, title, created_at, updated_at, executor_model, planner_model, "
    "status, meta FROM sessions"
)


def _session_info(conn: sqlite3.Connection, row: tuple[Any, ...]) -> SessionInfo:
    counts = conn.execute(
        "SELECT agent, COUNT(*) FROM messages WHERE session_id = ? GROUP BY agent ORDER BY agent",
        (row[0],),
    ).fetchall()
    return SessionInfo(
        id=row[0],
        workspace=row[1],
        title=row[2],
        created_at=row[3],
        updated_at=row[4],
        executor_model=row[5],
        planner_model=row[6],
        status=row[7],
        meta=json.loads(row[8]),
        message_counts={str(a): int(n) for a, n in counts},
    )


def _agent_order(agent: str) -> tuple[int, str]:
    return (AGENTS.index(agent) if agent in AGENTS else len(AGENTS), agent)


def _fence(text: str, info: str = "") -> list[str]:
    """A code fence longer than any backtick run inside ``text``."""
    from reasonix.fences import fence_for  # only for an export: not on the prompt's path

    fence = fence_for(text)
    return [fence + info, text, fence]


def _markdown_message(message: Message) -> list[str]:
    from reasonix.messages import AssistantMessage, ToolMessage

    if isinstance(message, AssistantMessage):
        lines = ["### assistant"]
        if message.reasoning_content:
            lines += ["", "<details><summary>reasoning</summary>", ""]
            lines += [message.reasoning_content, "", "</details>"]
        if message.content:
            lines += ["", message.content]
        for call in message.tool_calls:
            lines += ["", f"**tool call** `{call.name}` (`{call.id}`)", ""]
            lines += _fence(call.arguments, "json")
        return lines
    if isinstance(message, ToolMessage):
        label = "tool error" if message.is_error else "tool result"
        name = f" `{message.name}`" if message.name else ""
        return [f"### {label}{name} (`{message.tool_call_id}`)", "", *_fence(message.content)]
    return [f"### {message.role}", "", message.content]


class StoreSink:
    """A :class:`~reasonix.events.Sink` that persists a session's events and usage.

    Text and reasoning deltas are skipped (the finished messages are stored instead);
    ``UsageEvent`` is also written to the usage table.
    """

    SKIPPED = frozenset({"text_delta", "reasoning_delta"})

    def __init__(self, store: SessionStore, session_id: str) -> None:
        self.store = store
        self.session_id = session_id

    def emit(self, event: Event) -> None:
        from reasonix.events import ToolCharged, UsageEvent, charge_source
        from reasonix.messages import Usage

        if event.kind in self.SKIPPED:
            return
        self.store.record_event(self.session_id, event)
        if isinstance(event, UsageEvent):
            self.store.record_usage(
                self.session_id, event.source, event.model, event.usage, event.cost
            )
        elif isinstance(event, ToolCharged):
            # A paid tool request (web_search): its own source, no tokens, its price.
            source = charge_source(event.service, str(event.source))
            for _ in range(event.requests):
                cost = event.cost / event.requests
                self.store.record_usage(self.session_id, source, event.service, Usage(), cost)
