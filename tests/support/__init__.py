"""Helpers shared by the test modules, each defined once:

- :mod:`tests.support.approvals`: a scripted approver and a harness that runs the real built-in
  tools behind a permission engine;
- :mod:`tests.support.sleep`: stand-ins for the providers' ``sleep`` seam, so retries do not
  wait;
- :mod:`tests.support.mcp`: the raw JSON-RPC MCP fixture server as a server config;
- :mod:`tests.support.sessions`: opening a session façade on a temp project wired to the fake
  DeepSeek servers;
- :mod:`tests.support.cli`: the clean environment for the real CLI as a subprocess, and running
  it.

Fixtures every module may use (``servers``, ``store``, ``make_provider``) live in
``tests/conftest.py``.
"""
