"""MCP servers as tool sources.

Configure servers with ``[[mcp.servers]]`` in ``reasonix.toml`` (:func:`servers_from_toml`) or a
``.mcp.json`` file as other agents write it (:func:`servers_from_mcp_json`), then::

    manager = McpManager(configs, log_dir, sink)
    await manager.start()                 # concurrent, each bounded by its startup_timeout
    registry = registry.with_tools(manager.tools())
    ...
    await manager.aclose()                # close stdin, then terminate, then kill

Design
------
*Transports.* A local command is spoken to over stdio (our own transport: exit codes, stderr to
``<log_dir>/<server>.log`` and never to the terminal, non-JSON-RPC stdout reported); a ``url`` over
streamable HTTP. Each connection lives in a background task on the caller's event loop that
enters and exits the SDK's context managers itself (anyio cancel scopes must be left by the task
that entered them); tool calls from the agent's task go through that session.

*Failures never stop start-up.* A missing command, a crash, a start-up timeout or garbage on
stdout makes that server ``failed``: an :class:`~reasonix.events.ErrorEvent` goes to the sink,
:meth:`McpManager.status` says why (for ``reasonix doctor``), and the other servers carry on. A
server that dies mid-session becomes ``exited``; its tools answer with an error naming the exit
code and ``/mcp restart <name>``; :meth:`McpManager.restart` brings it back.

*Tools.* Each server tool becomes a :class:`~reasonix.tools.registry.Tool` named
``mcp__<server>__<tool>``, sanitised to ``[a-zA-Z0-9_-]{1,64}`` (cut with a short hash when too
long, unique), category ``mcp``, ``read_only`` from ``readOnlyHint`` only when the user's own
``[[mcp.servers]]`` entry says ``trust_annotations = true`` (annotations are the server's
claims), and ``destructive`` from ``destructiveHint`` (the spec's default, true, when a
non-read-only tool does not say).
Input schemas are normalised for the model: an object at the top, ``$schema``/``title`` dropped,
local ``$ref``/``$defs`` inlined, keys sorted. Results map text, images and audio (described),
embedded resources and resource links, and ``structuredContent`` (when the text does not already
carry it) into a ``ToolResult``; ``isError`` stays an error result; JSON-RPC errors and timeouts
become clear error results (a timed-out call is cancelled and the session stays usable).

*Cache stability and ``tools/list_changed``.* The model-facing tool list is part of the cached
prompt prefix, so it must be byte-identical on every request of a session. :meth:`McpManager.tools`
therefore returns a *snapshot* taken when start-up finished. A server that announces
``notifications/tools/list_changed``, or that comes back from a restart with different tools, does
not change that snapshot: the change is reported (a ``mcp_tools_changed`` notice saying it applies
to the next session) and listed by :meth:`McpManager.pending_changes`. A frontend starting a new
session calls :meth:`McpManager.refresh_snapshot` to re-list and take a new snapshot. Until then
the old tool names keep routing to the (possibly restarted) server by the server's own tool name;
a tool the server dropped answers with the server's error.

Importing this package does not import the MCP SDK (about a second): that happens only when a
server is started.
"""

from reasonix.mcp.config import McpServerConfig, servers_from_mcp_json, servers_from_toml
from reasonix.mcp.convert import normalize_schema, result_to_tool_result, tool_name
from reasonix.mcp.manager import McpManager, McpServerStatus, PendingChange, ServerState

__all__ = [
    "McpManager",
    "McpServerConfig",
    "McpServerStatus",
    "PendingChange",
    "ServerState",
    "normalize_schema",
    "result_to_tool_result",
    "servers_from_mcp_json",
    "servers_from_toml",
    "tool_name",
]
