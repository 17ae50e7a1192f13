"""``reasonix serve``: a local web dashboard over the session façade, secure by default.

:mod:`reasonix.web.security` keeps it for its user (token, cookie, Host/Origin/CSRF checks,
headers), :mod:`reasonix.web.hub` numbers each session's events for the browser's event
stream, :mod:`reasonix.web.server` is the Starlette app, and ``static/`` the page itself
(hand-written HTML, CSS and JavaScript, no build step, nothing fetched from elsewhere).
Importing this package imports nothing heavy; its modules need Starlette.
"""
