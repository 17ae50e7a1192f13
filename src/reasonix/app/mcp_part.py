"""The MCP part of a session (``session.mcp``): the servers' status, problems and restart."""

from __future__ import annotations

from typing import TYPE_CHECKING

from reasonix.errors import ReasonixError

if TYPE_CHECKING:
    from reasonix.app.session import AgentSession

__all__ = ["SessionMcp"]


class SessionMcp:
    """The session's MCP servers; ``session.mcp``."""

    def __init__(self, session: AgentSession) -> None:
        self._s = session

    def status(self) -> list[str]:
        """One line per MCP server: its state, tools and, when it failed, why."""
        if self._s._mcp is None:
            return ["No MCP servers are configured ([[mcp.servers]] in reasonix.toml)."]
        return [s.line() for s in self._s._mcp.status()]

    def problems(self) -> list[str]:
        """One line per configured MCP server that is not running because it failed to start
        or exited, saying why (empty when all are well): frontends show these at start-up."""
        if self._s._mcp is None:
            return []
        return [
            f"MCP server {s.line()}"
            for s in self._s._mcp.status()
            if str(s.state) in ("failed", "exited")
        ]

    async def restart(self, name: str) -> str:
        """Restart MCP server ``name``; the answer says how it came back (or why not)."""
        if self._s._mcp is None:
            return "No MCP servers are configured."
        try:
            status = await self._s._mcp.restart(name)
        except (KeyError, ValueError, ReasonixError) as exc:
            return str(exc)
        return str(status.line())
