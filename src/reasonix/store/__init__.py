"""Session persistence: SQLite (WAL) storage of sessions, messages, events and usage."""

from __future__ import annotations

from reasonix.store.sqlite import (
    DATA_DIR_ENV,
    SESSION_STATUSES,
    SessionInfo,
    SessionStore,
    StoreSink,
    UsageTotal,
    default_store_path,
)

__all__ = [
    "DATA_DIR_ENV",
    "SESSION_STATUSES",
    "SessionInfo",
    "SessionStore",
    "StoreSink",
    "UsageTotal",
    "default_store_path",
]
