"""The raw JSON-RPC MCP server in ``tests/fixtures/mcp/`` as a server config."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from reasonix.mcp import McpServerConfig

#: The fixture server's script; its flags (``--crash``, ``--garbage``, ``--sleep N``, ...) pick
#: how it misbehaves.
FAKE = str(Path(__file__).parent.parent / "fixtures" / "mcp" / "fake_server.py")


def fake_server(name: str, *args: str, **options: Any) -> McpServerConfig:
    """A config that runs the fixture server with ``args`` (``options``: timeouts and the
    other :class:`~reasonix.mcp.McpServerConfig` fields)."""
    return McpServerConfig(name, command=sys.executable, args=(FAKE, *args), **options)
