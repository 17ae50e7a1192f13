"""Files only the user can read: the session store, its journal, logs and exports.

A session holds everything the agent saw (source code, command output, sometimes a secret that
slipped past redaction), so its folder is 0700 and its files 0600 whatever the umask. These
helpers create them that way and tighten ones an older version left open. On Windows the
modes mean little and are left alone.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600


def private_dir(path: Path) -> Path:
    """Create ``path`` (and parents) if needed and make it 0700 when we own it.

    A folder with the sticky bit (``/tmp``) or owned by someone else is shared: it is left as
    it is, and the files in it are still made private."""
    path.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
    if sys.platform == "win32":  # pragma: no cover
        return path
    with contextlib.suppress(OSError):
        st = path.stat()
        shared = st.st_mode & stat.S_ISVTX or st.st_uid != os.getuid()
        if not shared and stat.S_IMODE(st.st_mode) != DIR_MODE:
            path.chmod(DIR_MODE)
    return path


def private_file(path: Path) -> Path:
    """Make an existing file 0600 (create it empty, 0600, when missing)."""
    if sys.platform == "win32":  # pragma: no cover
        return path
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, FILE_MODE)
        try:
            if stat.S_IMODE(os.fstat(fd).st_mode) != FILE_MODE:
                os.fchmod(fd, FILE_MODE)
        finally:
            os.close(fd)
    return path


def tighten_existing(path: Path) -> None:
    """Make ``path`` 0600 if it exists (SQLite's ``-wal`` and ``-shm`` files)."""
    if sys.platform == "win32":  # pragma: no cover
        return
    with contextlib.suppress(FileNotFoundError, PermissionError, OSError):
        if stat.S_IMODE(path.stat().st_mode) != FILE_MODE:
            path.chmod(FILE_MODE)


def write_private_text(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path``, a 0600 file (an export may hold a transcript)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        if sys.platform != "win32":
            os.fchmod(f.fileno(), FILE_MODE)
        f.write(text)


__all__ = ["private_dir", "private_file", "tighten_existing", "write_private_text"]
