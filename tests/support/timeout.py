"""A per-test time limit, so a test that loops (a mutant of a retry loop, a wait that never
ends) fails instead of hanging the run: SIGALRM raises :class:`TestTimedOut` in the test, and
``faulthandler`` dumps every thread's stack and ends the process if even that does not get
through (a block in C code). The limit is ``REASONIX_TEST_TIMEOUT`` seconds (default 600: far
above any test on a loaded machine; the mutation script sets a short one); 0 turns it off."""

from __future__ import annotations

import faulthandler
import os
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

__all__ = ["TestTimedOut", "limit_seconds", "time_limit"]

DEFAULT_SECONDS = 600.0
#: after the limit, how long the test has to unwind before the process is ended
GRACE_SECONDS = 30.0


class TestTimedOut(AssertionError):
    """The test ran past its time limit."""

    __test__ = False  # not a test class, whatever pytest's name rules say


def limit_seconds() -> float:
    raw = os.environ.get("REASONIX_TEST_TIMEOUT", "")
    try:
        return float(raw) if raw else DEFAULT_SECONDS
    except ValueError:
        return DEFAULT_SECONDS


@contextmanager
def time_limit(seconds: float, name: str) -> Iterator[None]:
    """Raise :class:`TestTimedOut` in the main thread after ``seconds`` (0 or no SIGALRM: no
    limit)."""
    if seconds <= 0 or not hasattr(signal, "SIGALRM"):
        yield
        return

    def expired(signum: int, frame: FrameType | None) -> None:
        raise TestTimedOut(f"{name} ran for more than {seconds:g} s (REASONIX_TEST_TIMEOUT)")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    faulthandler.dump_traceback_later(seconds + GRACE_SECONDS, exit=True, file=sys.stderr)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
