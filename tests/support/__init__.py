"""Helpers shared by the test modules, each defined once:

- :mod:`tests.support.approvals`: a scripted approver and a harness that runs the real built-in
  tools behind a permission engine;
- :mod:`tests.support.sleep`: stand-ins for the providers' ``sleep`` seam, so retries do not
  wait;
- :mod:`tests.support.mcp`: the raw JSON-RPC MCP fixture server as a server config;
- :mod:`tests.support.sessions`: opening a session façade on a temp project wired to the fake
  DeepSeek servers;
- :mod:`tests.support.cli`: the clean environment for the real CLI as a subprocess, and running
  it;
- :mod:`tests.support.project`: a temp project wired to two fake servers (the ``project``
  fixture, imported by the modules that use it) and ``json_lines``;
- :mod:`tests.support.wire`: the cache-first invariants checked on what the fake received;
- :mod:`tests.support.faults`: the fault-injection suite's tally and its checks;
- :mod:`tests.support.tui` / :mod:`tests.support.interactive`: the terminal app in a pty
  (an emulated screen, ``spawn``);
- :mod:`tests.support.acp`: the editor's side of ``reasonix acp``;
- :mod:`tests.support.agents`: scripted tools; :mod:`tests.support.questions`: ``ask`` questions;
- :mod:`tests.support.network`: the guard that refuses provider requests off loopback.

No test module imports another test module (tests/test_suite_rules.py checks it).

Fixtures every module may use (``servers``, ``store``, ``make_provider``) live in
``tests/conftest.py``.
"""
