"""``reasonix doctor``: check the setup and say how to fix each problem (exit 1 if any)."""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from reasonix.cli.commands import EXIT_FAILURE, EXIT_OK, overrides_from
from reasonix.providers.models import served_names

if TYPE_CHECKING:
    from reasonix.config import Config, RoleConfig
    from reasonix.mcp import McpServerConfig

Status = Literal["ok", "warn", "fail", "info"]
_MARK = {"ok": "ok  ", "warn": "warn", "fail": "FAIL", "info": "info"}


@dataclass(frozen=True, slots=True)
class Check:
    """One finding; ``fix`` says what to do when it is a problem."""

    status: Status
    what: str
    fix: str = ""

    def render(self) -> str:
        line = f"[{_MARK[self.status]}] {self.what}"
        if self.fix and self.status in ("warn", "fail"):
            line += f"\n       fix: {self.fix}"
        return line


def run_doctor(args: argparse.Namespace) -> int:
    trust = True if getattr(args, "trust", False) else None
    checks = diagnose(overrides_from(args), Path.cwd(), trust=trust)
    from reasonix.redaction import redact
    from reasonix.terminal_text import terminal_safe

    for check in checks:
        # Checks quote config values, server answers and MCP stderr: shown, never obeyed.
        print(terminal_safe(redact(check.render())))
    problems = sum(1 for c in checks if c.status == "fail")
    warnings = sum(1 for c in checks if c.status == "warn")
    print()
    if problems:
        print(f"{problems} problem(s), {warnings} warning(s).")
        return EXIT_FAILURE
    print(f"No problems found ({warnings} warning(s)).")
    return EXIT_OK


def diagnose(
    overrides: dict[str, object], workspace: Path, *, trust: bool | None = None
) -> list[Check]:
    """Every check, in the order they are shown. ``trust`` as for
    :func:`~reasonix.config.load_config` (None: the user's own records decide), so an untrusted
    folder's endpoints are never contacted and its MCP servers never started."""
    from reasonix.config import check_credentials, load_config, user_config_path
    from reasonix.errors import ConfigError

    checks: list[Check] = []
    try:
        config = load_config(workspace, overrides=overrides, trust=trust)
    except ConfigError as exc:
        checks.append(Check("fail", f"configuration: {exc}", "correct the value named above"))
        checks += _folders(user_config_path().parent)
        checks += _optional_tools()
        return checks
    sources = ", ".join(config.sources) or "built-in defaults only"
    checks.append(Check("ok", f"configuration is valid ({sources})"))
    from reasonix.app.launch import project_notice

    notice = project_notice(config)
    if notice:
        fix = (
            "review the files, then trust the folder (run `reasonix` and answer the question, "
            "or pass --trust)"
            if not config.trusted
            else "set these in your own config.toml if you want them"
        )
        checks.append(Check("warn", notice, fix))

    problems = check_credentials(config)
    for problem in problems:
        checks.append(Check("fail", "API key missing", problem))
    roles: list[tuple[str, RoleConfig]] = [("executor", config.executor)]
    if config.planner.enabled:
        roles.append(("planner", config.planner))
    seen: set[str] = set()
    for _, role in roles:
        pc = config.provider_for(role)
        if pc.name in seen:
            continue
        seen.add(pc.name)
        if pc.api_key_env and pc.api_key(os.environ):
            checks.append(Check("ok", f"provider {pc.name}: {pc.api_key_env} is set"))
        elif not pc.api_key_env:
            checks.append(Check("info", f"provider {pc.name}: no API key needed"))
    for role_name, role in roles:
        if role.effort == "medium":
            checks.append(
                Check("info", f'{role_name}.effort = "medium" runs as "high" (DeepSeek\'s mapping)')
            )
    checks += _endpoints(config, roles)
    checks += _folders(user_config_path().parent)
    checks.append(_snapshots(config))
    checks += _optional_tools()
    checks += _sandbox(config)
    checks += _mcp(config)
    return checks


def _sandbox(config: Config) -> list[Check]:
    """Whether shell commands will run confined, said plainly."""
    from reasonix.safety.confinement import UnavailableConfiner, confinement_for
    from reasonix.store import default_store_path

    bash = confinement_for(config.sandbox, data_dir=default_store_path().parent)
    if isinstance(bash.confiner, UnavailableConfiner):
        fix = "install bubblewrap (apt install bubblewrap)"
        return [Check("fail", bash.confiner.describe(), fix)]
    if bash.confiner.confined:
        return [Check("ok", bash.confiner.describe())]
    assert bash.notice is not None
    if bash.mode == "off":
        return [Check("warn", bash.notice, 'set [sandbox] bash = "auto" to confine commands')]
    hint = "install bubblewrap (e.g. apt install bubblewrap)"
    if not bash.acknowledged:
        hint += "; until then yolo mode and --yes need [sandbox] allow_unconfined = true"
    return [Check("warn", bash.notice, hint)]


def _endpoints(config: Config, roles: list[tuple[str, RoleConfig]]) -> list[Check]:
    """Reach each provider's ``GET {base}/models`` and check the role's model is listed."""
    checks: list[Check] = []
    listed: dict[str, set[str] | str | None] = {}
    for role_name, role in roles:
        pc = config.provider_for(role)
        if pc.name not in listed:
            listed[pc.name] = _list_models(pc.base_url, pc.api_key(os.environ), pc.headers)
            if pc.api_key(os.environ) or not pc.api_key_env:
                checks.append(_balance(pc.name, pc.base_url, pc.api_key(os.environ), pc.headers))
        models = listed[pc.name]
        where = f"{role_name} endpoint {pc.base_url}"
        if models == _REFUSED and not pc.api_key(os.environ):
            # The missing key is reported above; the endpoint itself answered.
            checks.append(
                Check("info", f"{where}: reachable; set {pc.api_key_env} to verify the model")
            )
        elif models == _REFUSED:
            checks.append(
                Check(
                    "fail",
                    f"{where}: the API key in {pc.api_key_env} was refused (401)",
                    f"check the value of {pc.api_key_env}: it may be mistyped, revoked or for "
                    "another provider",
                )
            )
        elif isinstance(models, str):
            checks.append(
                Check(
                    "fail",
                    f"{where}: unreachable ({models})",
                    f"check the network and providers.{pc.name}.base_url",
                )
            )
        elif models is None:
            checks.append(
                Check("info", f"{where}: reachable; model list not available, cannot verify")
            )
        elif role.model in models:
            checks.append(Check("ok", f"{where}: serves {role.model}"))
        elif served := [n for n in served_names(role.model) if n in models]:
            checks.append(
                Check(
                    "ok", f"{where}: serves {role.model} (an alias of {served[0]}, which it lists)"
                )
            )
        else:
            shown = ", ".join(sorted(models)[:8]) or "none"
            checks.append(
                Check(
                    "fail",
                    f"{where}: does not list the model {role.model!r} (it lists {shown})",
                    f"set {role_name}.model to a served model, e.g. `--model` / reasonix.toml",
                )
            )
    return checks


_REFUSED = "the API key was refused (401)"


def _balance(name: str, base_url: str, key: str | None, headers: Mapping[str, str]) -> Check:
    """What ``GET /user/balance`` says (DeepSeek; other endpoints usually have none)."""
    from reasonix.providers.balance import fetch_balance

    balance = fetch_balance(base_url, key, headers)
    if isinstance(balance, str):
        return Check("info", f"provider {name}: balance not available ({balance})")
    if not balance.available:
        return Check(
            "warn",
            f"provider {name}: balance {balance.describe()}",
            "top up the account (https://platform.deepseek.com/top_up) before running tasks",
        )
    return Check("ok", f"provider {name}: balance {balance.describe()}")


def _list_models(
    base_url: str, key: str | None, headers: Mapping[str, str]
) -> set[str] | str | None:
    """The served model ids; None when the endpoint has no model list (e.g. 404); a string
    describing the failure when it cannot be reached."""
    import httpx as hx

    url = base_url.rstrip("/") + "/models"
    sent = dict(headers)
    if key:
        sent["Authorization"] = f"Bearer {key}"
    try:
        response = hx.get(url, headers=sent, timeout=5.0)
    except hx.HTTPError as exc:
        return f"{type(exc).__name__}: {exc}"

    if response.status_code == 401:
        return _REFUSED
    if response.status_code != 200:
        return None
    try:
        data = response.json().get("data", [])
        return {str(m.get("id")) for m in data if isinstance(m, dict)}
    except (ValueError, AttributeError):
        return None


def _folders(config_dir: Path) -> list[Check]:
    from reasonix.store import default_store_path

    checks = []
    for label, folder, env in (
        ("config folder", config_dir, "REASONIX_CONFIG_DIR"),
        ("data folder", default_store_path().parent, "REASONIX_DATA_DIR"),
    ):
        try:
            folder.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=folder, prefix=".doctor-"):
                pass
            checks.append(Check("ok", f"{label} {folder} is writable"))
        except OSError as exc:
            checks.append(
                Check(
                    "fail",
                    f"{label} {folder} is not writable ({exc.strerror or exc})",
                    f"fix its permissions or set {env} to a writable folder",
                )
            )
    return checks


def _snapshots(config: Config) -> Check:
    """The size of the snapshot store that /undo and `reasonix rewind` restore from."""
    from reasonix.safety.checkpoints import checkpoint_store_size
    from reasonix.store import default_store_path

    settings = config.checkpoints
    if not settings.enabled:
        return Check(
            "warn",
            "snapshots are off: steps cannot be undone",
            "set [checkpoints] enabled = true in your config",
        )
    size, folders = checkpoint_store_size(default_store_path().parent)
    return Check(
        "info",
        f"snapshots: {size / 1024 / 1024:.1f} MB for {folders} folder(s) (pruned after "
        f"{settings.keep_days:g} days or past {settings.max_store_mb:g} MB per folder)",
    )


def _optional_tools() -> list[Check]:
    hints = {
        "rg": "install ripgrep for faster search (grep falls back to a Python search)",
        "git": "install git: the snapshots behind /undo and `reasonix rewind` need it",
        "bwrap": "install bubblewrap to sandbox shell commands (Linux)",
    }
    checks = []
    for name, hint in hints.items():
        found = shutil.which(name)
        if found:
            checks.append(Check("ok", f"{name} found at {found}"))
        else:
            checks.append(Check("warn", f"{name} not found (optional)", hint))
    return checks


def _mcp(config: Config) -> list[Check]:
    from reasonix.app.assembly import mcp_server_configs
    from reasonix.errors import ConfigError

    skipped: list[ConfigError] = []
    try:
        configs = mcp_server_configs(config, Path.cwd(), skipped=skipped)
    except ConfigError as exc:
        return [Check("fail", f"MCP configuration: {exc}", "correct [[mcp.servers]] or .mcp.json")]
    checks = [
        Check("warn", f"MCP server skipped: {problem}", "fix or remove that entry in .mcp.json")
        for problem in skipped
    ]
    if configs:
        checks += asyncio.run(_mcp_status(configs))
    return checks


def _tool_overflow(mcp_tools: list[Any]) -> Check | None:
    """Whether built-in plus MCP tools pass the 128 a DeepSeek request may carry."""
    from reasonix.control.todo_tools import executor_plan_tools
    from reasonix.mcp.overflow import fit_mcp_tools, overflow_notice
    from reasonix.tools.builtin import default_tools

    others = len(default_tools(Path.cwd())) + len(executor_plan_tools()) + 1  # + task
    note = overflow_notice(fit_mcp_tools(others, mcp_tools))
    if note is None:
        return None
    return Check(
        "warn",
        note,
        "nothing to do: every MCP tool stays callable; disable MCP servers you do not need "
        "to have more of them offered directly",
    )


async def _mcp_status(configs: list[McpServerConfig]) -> list[Check]:
    from reasonix.mcp import McpManager, ServerState

    checks = []
    with tempfile.TemporaryDirectory() as logs:
        manager = McpManager(configs, logs)
        try:
            await manager.start()
            overflow = _tool_overflow(manager.tools())
            if overflow is not None:
                checks.append(overflow)
            for status in manager.status():
                if status.state is ServerState.RUNNING:
                    checks.append(Check("ok", f"MCP {status.line()}"))
                elif status.state is ServerState.DISABLED:
                    checks.append(Check("info", f"MCP {status.line()}"))
                else:
                    checks.append(
                        Check(
                            "fail",
                            f"MCP {status.line()}",
                            f"check the command of [[mcp.servers]] {status.name!r} and run it "
                            "by hand to see its error",
                        )
                    )
        finally:
            await manager.aclose()
    return checks
