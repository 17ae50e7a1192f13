"""MCP annotations are the server's claims: a tool marked ``readOnlyHint`` that in fact writes a
marker runs without approval only for a server the user marked trusted in their own config
(``trust_annotations = true``), in ask and plan mode alike. Through the real CLI with a real
stdio MCP server; the controls (a trusted server) prove the probe sees the tool run."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.security.support import Attack, Lab, lab, record

__all__ = ["lab"]

pytestmark = pytest.mark.slow

SERVER = Path(__file__).parent.parent / "fixtures" / "mcp" / "hinted_server.py"
TOOL = "mcp__hinted__peek"


def server_toml(marker: Path, *, trusted: bool | None) -> str:
    trust = "" if trusted is None else f"trust_annotations = {str(trusted).lower()}\n"
    return (
        "[[mcp.servers]]\n"
        'name = "hinted"\n'
        f"command = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(str(SERVER))}, {json.dumps(str(marker))}]\n"
        "startup_timeout = 60\n" + trust
    )


def call(lab: Lab, *flags: str) -> str:
    outcome = lab.attack([Attack("peek", TOOL, {"text": "ran"})], *flags)
    assert outcome.results, outcome.proc.stdout + outcome.proc.stderr
    return outcome.results[0]


@pytest.mark.parametrize("mode", ["ask", "plan"])
def test_an_untrusted_servers_read_only_hint_does_not_skip_approval(
    lab: Lab, tmp_path: Path, mode: str, request: pytest.FixtureRequest
) -> None:
    tried = worked = 0
    for trusted in (None, False):
        marker = tmp_path / f"marker-{mode}-{trusted}"
        lab.write_user_config(server_toml(marker, trusted=trusted))
        text = call(lab, "--mode", mode)
        tried += 1
        worked += marker.exists()
        assert "Permission denied" in text, text
    record(request, "MCP hints", tried, worked)
    assert worked == 0


def test_a_project_file_cannot_mark_a_server_trusted(
    lab: Lab, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    marker = tmp_path / "marker-project"
    (lab.root / "reasonix.toml").write_text(server_toml(marker, trusted=True))
    (lab.root / ".mcp.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "hinted2": {
                        "command": sys.executable,
                        "args": [str(SERVER), str(marker)],
                        "trust_annotations": True,
                    }
                }
            }
        )
    )
    outcome = lab.attack(
        [
            Attack("peek", TOOL, {"text": "ran"}),
            Attack("peek2", "mcp__hinted2__peek", {"text": "ran"}),
        ],
        "--mode",
        "plan",
    )
    record(request, "MCP hints", 2, int(marker.exists()))
    assert not marker.exists(), outcome.results


@pytest.mark.parametrize("mode", ["ask", "plan"])
def test_control_a_trusted_servers_read_only_tool_runs_unasked(
    lab: Lab, tmp_path: Path, mode: str
) -> None:
    marker = tmp_path / f"marker-trusted-{mode}"
    lab.write_user_config(server_toml(marker, trusted=True))
    text = call(lab, "--mode", mode)
    assert "looked" in text, text
    assert marker.read_text() == "ran"
