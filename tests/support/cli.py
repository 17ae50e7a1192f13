"""Running the real ``python -m reasonix`` as a subprocess under test, in a clean environment.

Every CLI test needs the same thing: the test runner's environment without anything of
reasonix's or DeepSeek's own (so a developer's real key or config never reaches a test), private
data and config folders, a key for the fake servers under :data:`FAKE_KEY_ENV`, unbuffered output
and no colour. :func:`cli_env` builds it once; :func:`run_cli` runs the command with it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = ["FAKE_KEY_ENV", "cli_env", "run_cli"]

#: The variable the fake projects' ``api_key_env`` names (see ``fake_project_toml``).
FAKE_KEY_ENV = "REASONIX_FAKE_KEY"

#: Prefixes of the variables never inherited from the test runner.
_OWN_PREFIXES = ("REASONIX_", "DEEPSEEK_")


def cli_env(
    data: Path,
    config: Path,
    *,
    key: str | None = "sk-test",
    drop: Sequence[str] = (),
    inherit: bool = True,
    **extra: str,
) -> dict[str, str]:
    """The environment for a CLI subprocess: data in ``data``, the user's config in ``config``,
    ``key`` (None for none) under :data:`FAKE_KEY_ENV`, then ``extra``.

    ``inherit`` keeps the runner's variables except reasonix's, DeepSeek's, those starting with
    a prefix in ``drop`` and pytest's marker; without it only ``PATH`` is kept and ``LANG`` is
    ``C.UTF-8``, for a test that must know every variable the process sees.
    """
    if inherit:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith((*_OWN_PREFIXES, *drop)) and k != "PYTEST_CURRENT_TEST"
        }
    else:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
    if key is not None:
        env[FAKE_KEY_ENV] = key
    env.update(
        {
            "REASONIX_DATA_DIR": str(data),
            "REASONIX_CONFIG_DIR": str(config),
            "PYTHONUNBUFFERED": "1",
            "NO_COLOR": "1",
        }
    )
    env.update(extra)
    return env


def run_cli(
    args: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    stdin: str | None = None,
    timeout: float = 300,  # a hang's bound, not a claim about speed: a loaded machine
) -> subprocess.CompletedProcess[str]:
    """``python -m reasonix *args`` in ``cwd``, its output captured as text; never raises for
    a non-zero exit (tests assert on ``returncode``)."""
    return subprocess.run(
        [sys.executable, "-m", "reasonix", *args],
        cwd=cwd,
        env=dict(env),
        input=stdin,
        # No input given: none at all (not the runner's), so nothing is read as piped input.
        stdin=subprocess.DEVNULL if stdin is None else None,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
