"""The application core shared by every frontend: builds a :class:`Runtime` (providers, tools,
permissions, checkpoints, MCP, controller, persistence) from configuration, and exposes the
slash-command behaviour as methods so the terminal app and a web view behave the same.

Import :mod:`reasonix.app.runtime` directly; this package stays import-light.
"""
