"""Questions for the ``ask`` tool, shared by its tests in each frontend."""

from __future__ import annotations

from typing import Any

QUESTIONS: list[dict[str, Any]] = [
    {
        "question": "Which database should the service use?",
        "header": "Database",
        "options": [
            {"label": "SQLite", "description": "one file, no server"},
            {"label": "Postgres", "description": "a server, for many writers"},
        ],
        "multiSelect": False,
    },
    {
        "question": "Which extras do you want?",
        "header": "Extras",
        "options": [
            {"label": "Metrics", "description": "a /metrics endpoint"},
            {"label": "Tracing", "description": "OpenTelemetry spans"},
            {"label": "Admin UI", "description": "a small admin page"},
        ],
        "multiSelect": True,
    },
]
