"""The environment of a test's own git commands: no system or user configuration, and a fixed
identity, so a commit works on any machine and nothing of the developer's setup leaks in.
(No tests here.)"""

from __future__ import annotations

import os

ISOLATED_GIT: dict[str, str] = {
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@localhost",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@localhost",
}
