"""Test doubles shipped with reasonix so users can test their own setups offline.

- :class:`FakeDeepSeekServer`: a real HTTP server on loopback speaking DeepSeek's wire protocol.
- :class:`ScriptedProvider` / :class:`FunctionProvider`: in-process providers.
- :class:`Reply` / :class:`Fault`: what a scripted model says or how it fails.
"""

from __future__ import annotations

import importlib
from typing import Any

from reasonix.testing.providers import FunctionProvider, ScriptedProvider
from reasonix.testing.script import Fault, Reply, make_call_id

__all__ = [
    "FakeDeepSeekServer",
    "Fault",
    "FunctionProvider",
    "Reply",
    "ScriptedProvider",
    "make_call_id",
]


def __getattr__(name: str) -> Any:
    if name == "FakeDeepSeekServer":
        return importlib.import_module("reasonix.testing.fake_server").FakeDeepSeekServer
    raise AttributeError(name)
