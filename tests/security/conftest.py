"""The security suite's tally: each test records ("attacks", (class, tried, worked)) in its
user_properties; the totals per attack class are printed at the end of the run."""

from __future__ import annotations

from typing import Any


def pytest_terminal_summary(terminalreporter: Any) -> None:
    totals: dict[str, list[int]] = {}
    for reports in terminalreporter.stats.values():
        for report in reports:
            if getattr(report, "when", None) != "call":
                continue
            for name, value in getattr(report, "user_properties", ()):
                if name == "attacks":
                    kind, tried, worked = value
                    entry = totals.setdefault(kind, [0, 0])
                    entry[0] += tried
                    entry[1] += worked
    for kind, (tried, worked) in sorted(totals.items()):
        terminalreporter.write_line(f"security: {kind}: {tried} attacks tried, {worked} worked")
