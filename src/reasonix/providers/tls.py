"""The TLS set-up the model clients of a process share."""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import ssl

__all__ = ["tls_context"]

#: The contexts made so far, by the CA variables each was read with.
_MADE: dict[tuple[str, str], ssl.SSLContext] = {}
_LOCK = threading.Lock()


def tls_context() -> ssl.SSLContext:
    """httpx's default TLS context (its CA bundle, or ``SSL_CERT_FILE`` / ``SSL_CERT_DIR``),
    made once a process: reading the CA bundle costs ~30 ms of CPU, for each of a session's
    clients, and a batch opens many sessions at once. A context is safe to share between
    clients and threads once made."""
    import httpx

    key = (os.environ.get("SSL_CERT_FILE", ""), os.environ.get("SSL_CERT_DIR", ""))
    with _LOCK:
        if key not in _MADE:
            _MADE[key] = httpx.create_ssl_context()
        return _MADE[key]
