"""A secret named in ``[sandbox] allow_read``.

``allow_read`` shows more of the user's files read-only in the sandbox, "never ~/.ssh and the
like": the secrets under the home folder are masked wherever a bound folder holds them. An
entry that is itself inside a secret (``~/.ssh/id_rsa``, ``~/.config/gh/hosts.yml``) was bound
as it was and masked by nothing (the mask only covered secrets below a bound path), so a
confined ``cat`` printed the key into the tool result, and so to the model.

Control: with ``[sandbox] bash = "off"`` the same command prints both secrets, and an ordinary
``allow_read`` entry stays visible in the sandbox.
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

KEY = "ssh-private-key-5c2e90"
TOKEN = "gh-oauth-token-81d4aa"
ALLOW_READ = '[sandbox]\nallow_read = ["~/.ssh/id_rsa", "~/.config/gh/hosts.yml", "~/data"]\n'


def _home(lab: Lab) -> None:
    (lab.home / ".ssh").mkdir(exist_ok=True)
    (lab.home / ".ssh" / "id_rsa").write_text(f"-----BEGIN KEY-----\n{KEY}\n")
    (lab.home / ".config" / "gh").mkdir(parents=True, exist_ok=True)
    (lab.home / ".config" / "gh" / "hosts.yml").write_text(f"oauth_token: {TOKEN}\n")
    (lab.home / "data").mkdir(exist_ok=True)
    (lab.home / "data" / "notes.txt").write_text("an ordinary file\n")


READ = Attack(
    "read secrets named in allow_read",
    "bash",
    {"command": "cat ~/.ssh/id_rsa; cat ~/.config/gh/hosts.yml; cat ~/data/notes.txt"},
)


def test_a_secret_named_in_allow_read_stays_hidden(
    lab: Lab, request: pytest.FixtureRequest
) -> None:
    _home(lab)
    lab.write_user_config(ALLOW_READ)
    out = lab.attack([READ], "--yes")
    leaked = [s for s in (KEY, TOKEN) if s in out.results[0]]
    record(request, "bash confinement escapes", 2, len(leaked))
    assert leaked == [], out.results[0]
    assert "an ordinary file" in out.results[0], out.results[0]


def test_control_unconfined_both_secrets_are_read(lab: Lab) -> None:
    _home(lab)
    lab.write_user_config(ALLOW_READ + 'bash = "off"\n')
    out = lab.attack([READ], "--yes")
    assert KEY in out.results[0] and TOKEN in out.results[0], out.results[0]
