"""Secrets that live inside a toolchain folder the sandbox shows.

The sandbox's empty home shows toolchain folders read-only so builds and tests work
(``~/.cargo``, ``~/.local/share/uv``, ...), minus the credentials files known to live in them
(``~/.cargo/credentials.toml``). ``uv auth login`` keeps its credentials in a plaintext file in
uv's data folder, ``~/.local/share/uv/credentials/credentials.toml``, which was bound with the
rest of ``~/.local/share/uv``: a confined ``cat`` printed the user's package-index token into
the tool result, and so to the model.

Worked before the fix in this module's commit (the file is listed with the other credentials
never visible). Control: with ``[sandbox] bash = "off"`` the same command prints the token, and
the rest of the folder (uv's Python builds) stays visible in the sandbox.
"""

from __future__ import annotations

import shutil

import pytest

from tests.security.support import Attack, Lab, lab, record

__all__ = ["lab"]

pytestmark = [
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed"),
    pytest.mark.slow,
]

TOKEN = "uv-index-token-3f9a71"


def _uv_home(lab: Lab) -> None:
    uv = lab.home / ".local" / "share" / "uv"
    (uv / "credentials").mkdir(parents=True)
    (uv / "credentials" / "credentials.toml").write_text(
        f'[[credential]]\nservice = "https://pypi.example"\npassword = "{TOKEN}"\n'
    )
    (uv / "python" / "cpython-3.12").mkdir(parents=True)
    (uv / "python" / "cpython-3.12" / "README").write_text("a uv-managed Python\n")


READ = Attack(
    "read uv's credentials",
    "bash",
    {
        "command": "cat ~/.local/share/uv/credentials/credentials.toml; "
        "cat ~/.local/share/uv/python/cpython-3.12/README"
    },
)


def test_uv_credentials_are_not_visible_in_the_sandbox(
    lab: Lab, request: pytest.FixtureRequest
) -> None:
    _uv_home(lab)
    out = lab.attack([READ], "--yes")
    leaked = TOKEN in out.results[0]
    record(request, "bash confinement escapes", 1, int(leaked))
    assert not leaked, out.results[0]
    assert "a uv-managed Python" in out.results[0], out.results[0]


def test_control_unconfined_the_token_is_read(lab: Lab) -> None:
    _uv_home(lab)
    lab.write_user_config('[sandbox]\nbash = "off"\n')
    out = lab.attack([READ], "--yes")
    assert TOKEN in out.results[0], out.results[0]
