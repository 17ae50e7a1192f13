"""How the host starts MCP servers: its API-key variables are withheld from their environment,
and a foreign or broken `.mcp.json` entry is skipped and reported instead of stopping start-up."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from reasonix.app.assembly import mcp_server_configs
from reasonix.config import load_config
from reasonix.errors import ConfigError
from reasonix.mcp import McpManager, McpServerConfig
from tests.support.mcp import FAKE

pytestmark = pytest.mark.slow


async def test_withheld_variables_do_not_reach_the_server(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import os, runpy, sys\n"
        "sys.stderr.write('KEY=' + os.environ.get('REASONIX_TEST_KEY', '<unset>') + '\\n')\n"
        "sys.stderr.write('OTHER=' + os.environ.get('REASONIX_TEST_OTHER', '<unset>') + '\\n')\n"
        "sys.stderr.flush()\n"
        f"sys.argv = [{FAKE!r}]\n"
        f"runpy.run_path({FAKE!r}, run_name='__main__')\n"
    )
    os.environ["REASONIX_TEST_KEY"] = "sk-secret"
    os.environ["REASONIX_TEST_OTHER"] = "visible"
    try:
        config = McpServerConfig(
            "probe",
            command=sys.executable,
            args=(str(probe),),
            withheld_env=("REASONIX_TEST_KEY",),
            # The user's [environment] include: even a pattern that matches the key variable
            # does not pass it.
            pass_env=("REASONIX_TEST_*",),
        )
        async with McpManager([config], tmp_path / "logs") as manager:
            (status,) = manager.status()
            assert status.log_path is not None
            log = status.log_path.read_text()
    finally:
        del os.environ["REASONIX_TEST_KEY"], os.environ["REASONIX_TEST_OTHER"]
    assert "KEY=<unset>" in log
    assert "sk-secret" not in log
    assert "OTHER=visible" in log


def test_host_withholds_provider_keys_and_skips_unusable_json_entries(tmp_path: Path) -> None:
    (tmp_path / ".mcp.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "ok": {"command": sys.executable, "args": [FAKE]},
                    "legacy": {"type": "sse", "url": "http://127.0.0.1:1/sse"},
                    "needs-var": {"command": "${REASONIX_TEST_UNSET_VAR}"},
                }
            }
        )
    )
    config = load_config(tmp_path, environ={}, user_config=tmp_path / "none.toml")
    skipped: list[ConfigError] = []
    servers = mcp_server_configs(config, tmp_path, {}, skipped)
    assert [s.name for s in servers] == ["ok"]
    assert servers[0].withheld_env == ("DEEPSEEK_API_KEY",)
    problems = " | ".join(str(e) for e in skipped)
    assert "legacy" in problems
    assert "REASONIX_TEST_UNSET_VAR" in problems
