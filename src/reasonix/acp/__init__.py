"""``reasonix acp``: reasonix as an Agent Client Protocol agent over stdio.

Editors (Zed, JetBrains IDEs, Neovim and VS Code extensions) and evaluation harnesses speak ACP,
a JSON-RPC protocol over the agent's stdin and stdout. This package is a frontend of the session
façade (:class:`reasonix.app.AgentSession`) and nothing else: :mod:`reasonix.acp.updates` turns
our typed events into ACP ``session/update`` payloads (pure functions), and
:mod:`reasonix.acp.server` answers the protocol's methods by calling the façade.

The official SDK (``agent-client-protocol`` on PyPI, imported as ``acp``) is loaded only by
``reasonix acp``; nothing else in reasonix imports this package.
"""

from __future__ import annotations

__all__: list[str] = []
