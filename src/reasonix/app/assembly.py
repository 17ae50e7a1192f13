"""Assembly: configuration → the parts of a session, with no I/O beyond starting MCP servers.

- one :class:`~reasonix.providers.openai_compat.OpenAICompatProvider` per role, from the role's
  ``[[providers]]`` entry (base_url, api_key_env, headers, extra_body) and the model's
  :class:`~reasonix.providers.models.ModelInfo` from config (:func:`make_providers`);
- the :class:`~reasonix.safety.permissions.PermissionEngine` (mode and rules from config, the
  frontend's approver) (:func:`make_permissions`);
- the tool registry: built-in tools confined by the workspace sandbox, plus MCP tools when
  configured, behind the permission engine (:func:`make_registry`);
- :class:`~reasonix.agent.AgentOptions` per role (``effort`` becomes ``reasoning_effort``;
  ``"off"`` disables thinking) and the :class:`~reasonix.control.Controller` over both
  (:func:`make_controller`);
- the MCP servers: ``[[mcp.servers]]`` plus the project's ``.mcp.json`` (:func:`mcp_server_configs`,
  :func:`start_mcp`).

The session façade (:mod:`reasonix.app.session`) calls these once per opened session.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reasonix.agent.agent import DEFAULT_SYSTEM_PROMPT, AgentHooks, AgentOptions
from reasonix.agent.memory import find_memory_files, load_memory, system_prompt_with_memory
from reasonix.agent.session import Session
from reasonix.config import Config, RoleConfig
from reasonix.control import Controller, Options, OrchestratorOptions
from reasonix.control.delegation import ChildRun, DelegationLimits, ModelChoice, WriterSetup
from reasonix.control.gate import GateOptions
from reasonix.control.orchestrator import PLANNER_SYSTEM_PROMPT, PlanApprover
from reasonix.control.review import REVIEWER_SYSTEM_PROMPT, ReviewSettings
from reasonix.errors import ConfigError, UnknownModelError
from reasonix.events import NoticeEvent, Sink
from reasonix.messages import ReasoningEffort
from reasonix.providers.base import Provider
from reasonix.providers.models import Prices, prices_in
from reasonix.safety.checkpoints import CheckpointManager
from reasonix.safety.confinement import BashConfinement, Confiner, confinement_for
from reasonix.safety.permissions import Approver, PermissionEngine, PermissionRecord
from reasonix.tools.limits import ToolLimits
from reasonix.tools.registry import PermissionPolicy, Tool, ToolRegistry

if TYPE_CHECKING:
    from reasonix.extensions.agents import AgentProfile
    from reasonix.mcp import McpManager, McpServerConfig
    from reasonix.safety.sandbox import Sandbox
    from reasonix.tools.builtin.jobs import JobTable

__all__ = [
    "ProviderFactory",
    "effort_options",
    "make_controller",
    "make_permissions",
    "make_provider",
    "make_providers",
    "make_registry",
    "make_sandbox",
    "make_subagent_provider",
    "mcp_entries",
    "mcp_server_configs",
    "memory_sources",
    "project_memory",
    "start_configured_mcp",
    "start_mcp",
]

#: Builds a role's provider (``"executor"`` or ``"planner"``) in place of the configured one.
ProviderFactory = Callable[[str, RoleConfig], Provider]

#: The planner's step budget per planning round.
PLANNER_MAX_STEPS = 12


def effort_options(role: RoleConfig) -> tuple[bool, ReasoningEffort | None]:
    """``(thinking, reasoning_effort)`` for a role: ``effort = "off"`` disables thinking."""
    return role.thinking, role.reasoning_effort


def make_provider(config: Config, role: RoleConfig, environ: Mapping[str, str] | None) -> Provider:
    """The configured provider for ``role``; the key is read from ``environ`` when given
    (otherwise from the process environment, by the provider, when it first needs it)."""
    from reasonix.providers.openai_compat import OpenAICompatProvider

    pc = config.provider_for(role)
    api_key = pc.api_key(environ) if environ is not None else None
    return OpenAICompatProvider(
        base_url=pc.base_url,
        model=role.model,
        api_key=api_key,
        api_key_env=pc.api_key_env or None,
        info=config.model_info(role.model),
        headers=dict(pc.headers),
        extra_body=dict(pc.extra_body),
    )


def make_providers(
    config: Config,
    environ: Mapping[str, str] | None = None,
    factory: ProviderFactory | None = None,
) -> dict[str, Provider]:
    """One provider per active role: ``executor`` always, ``planner`` unless disabled,
    ``reviewer`` (auto mode's) always, the executor's own when it runs on the same model."""
    roles: list[tuple[str, RoleConfig]] = [("executor", config.executor)]
    if config.planner.enabled:
        roles.append(("planner", config.planner))
    review = config.review_role
    same = (review.provider, review.model) == (config.executor.provider, config.executor.model)
    if not same:
        roles.append(("reviewer", review))
    made = {
        name: factory(name, role) if factory is not None else make_provider(config, role, environ)
        for name, role in roles
    }
    if same:
        made["reviewer"] = made["executor"]
    return made


def make_confinement(
    config: Config, data_dir: Path, environ: Mapping[str, str] | None = None
) -> BashConfinement:
    """How bash commands are confined, from the user's ``[sandbox]`` (``data_dir``, the store's
    folder, stays invisible to them)."""
    return confinement_for(config.sandbox, data_dir=data_dir, environ=environ)


def make_permissions(
    config: Config,
    approver: Approver | None,
    on_decision: Callable[[PermissionRecord], None] | None = None,
    bash: BashConfinement | None = None,
) -> PermissionEngine:
    """The permission engine from ``[permissions]``; ``approver`` None makes "ask" a denial.
    With ``bash`` unconfined and not accepted by the user, yolo mode is refused."""
    return PermissionEngine(
        unattended_refusal=bash.unattended_error("yolo mode") if bash is not None else None,
        mode=config.permissions.mode,
        allow=config.permissions.allow,
        ask=config.permissions.ask,
        deny=config.permissions.deny,
        approver=approver,
        on_decision=on_decision,
    )


def make_sandbox(config: Config, workspace: Path) -> Sandbox:
    """The workspace sandbox: the workspace and ``[workspace] roots``, the built-in read-deny
    list plus ``[workspace] read_deny``."""
    from reasonix.safety.sandbox import DEFAULT_READ_DENY, Sandbox

    ws = config.workspace
    roots = [workspace, *(workspace / Path(r).expanduser() for r in ws.roots)]
    # Configured patterns extend the built-in deny list; they never switch it off.
    return Sandbox(roots, read_deny=(*DEFAULT_READ_DENY, *ws.read_deny))


def search_tools(config: Config) -> list[Tool]:
    """``web_search`` on the executor's provider (``[web] search = "deepseek"``), or none."""
    if config.web.search == "off":
        return []
    from reasonix.tools.builtin.web_search import SearchOptions, search_endpoint, search_tool

    provider = config.provider_for(config.executor)
    options = SearchOptions(
        endpoint=search_endpoint(provider.base_url),
        api_key_env=provider.api_key_env or None,
        timeout=config.web.timeout,
    )
    return [search_tool(options)]


def make_registry(
    config: Config,
    workspace: Path,
    permissions: PermissionPolicy,
    checkpoints: CheckpointManager | None,
    mcp: McpManager | None = None,
    extra: Iterable[Tool] = (),
    confiner: Confiner | None = None,
    jobs: JobTable | None = None,
    executor_only: int = 0,
) -> ToolRegistry:
    """Built-in tools (sandboxed to the workspace and ``[workspace] roots``), ``extra`` tools
    (the ``skill`` tool) and MCP tools, every call checked by ``permissions``. With ``jobs``,
    ``bash`` starts background jobs there; ``executor_only`` counts the tools the executor gets
    beside these (MCP tools fit in what is left of the 128)."""
    from reasonix.tools.builtin import ShellOptions, WebOptions, default_tools

    sandbox = make_sandbox(config, workspace)
    # The variables our providers read their keys from never reach the model's commands,
    # whatever they are called.
    key_vars = sorted({p.api_key_env for p in config.providers.values() if p.api_key_env})
    shell = ShellOptions(
        secret_env=tuple(key_vars),
        confiner=confiner,
        pass_env=config.environment.include,
        env=config.environment.set,
    )
    web = config.web
    limits = ToolLimits.from_config(config.limits)
    tools = default_tools(
        workspace,
        sandbox=sandbox,
        checkpoints=checkpoints,
        shell_options=shell,
        web_options=WebOptions(
            allow_private=web.allow_private,
            allow_hosts=web.allow_hosts,
            timeout=web.timeout,
            max_bytes=web.max_bytes,
        ),
        limits=limits,
        jobs=jobs,
    )
    registry = ToolRegistry(
        [*tools, *search_tools(config), *extra], policy=permissions, limits=limits
    )
    if mcp is not None:
        from reasonix.control.todo_tools import executor_plan_tools
        from reasonix.mcp.overflow import fit_mcp_tools

        # Never more than DeepSeek's 128 tools per request (reasonix.mcp.overflow), counting
        # the extra tools, the plan tools and the tools the controller adds: ``task`` and
        # ``task_apply`` (subagents, writers), ``update_goal`` (goals) and the executor-only
        # ones (jobs, ``ask``).
        sub = config.subagents
        added = sub.enabled + (sub.enabled and sub.writers) + config.goals.enabled
        others = len(registry) + len(executor_plan_tools()) + added + executor_only
        registry = registry.with_tools(fit_mcp_tools(others, mcp.tools(), permissions).tools)
    return registry


def _memory_homes() -> tuple[Path, Path]:
    """The user's config folder and Claude Code's (``~/.claude``)."""
    from reasonix.config import user_config_path

    return user_config_path().parent, Path.home() / ".claude"


def memory_sources(workspace: Path) -> list[Path]:
    """The memory files a new session reads (REASONIX.md / AGENTS.md / CLAUDE.md ...), in
    load order; empty when they cannot be listed."""
    try:
        user_dir, claude_home = _memory_homes()
        return find_memory_files(workspace, user_dir, claude_home)
    except (OSError, RuntimeError):  # RuntimeError: no home folder to be found
        return []


def project_memory(workspace: Path, files: list[Path] | None = None) -> str:
    """REASONIX.md / AGENTS.md / CLAUDE.md for a new session's system prompt (a resumed
    session keeps the system prompt it was stored with, so its prefix does not change)."""
    try:
        user_dir, claude_home = _memory_homes()
        found = memory_sources(workspace) if files is None else files
        return load_memory(found, user_dir=user_dir, user_dirs=(claude_home,))
    except (OSError, RuntimeError):
        return ""


def make_controller(
    config: Config,
    workspace: Path,
    *,
    providers: Mapping[str, Provider],
    registry: ToolRegistry,
    sessions: Mapping[str, Session],
    sink: Sink,
    plan_approver: PlanApprover | None,
    memory: str,
    on_subagent: Callable[[ChildRun, Session], None] | None = None,
    hooks: AgentHooks | None = None,
    executor_tools: Sequence[Tool] = (),
    writers: WriterSetup | None = None,
    profiles: Mapping[str, AgentProfile] | None = None,
    subagent_provider: Callable[[str], Provider] | None = None,
    executor_state: Mapping[str, Any] | None = None,
) -> Controller:
    """The Controller over both roles, continuing ``sessions`` (empty ones for a new session).
    With ``[subagents] enabled`` the executor has the ``task`` tool; ``on_subagent`` is told of
    each child session as it starts; ``writers`` (with ``[subagents] writers``) enables writer
    children; ``profiles`` are their ``subagent_type`` choices, whose models
    ``subagent_provider`` makes providers for."""

    def prices_for(model: str) -> tuple[Prices, Prices | None] | None:
        """Prices of a model the server answered with instead of the requested one."""
        try:
            usd = config.model_info(model).prices
        except UnknownModelError:
            return None
        return usd, prices_in("CNY", model, usd)

    def role_options(role: RoleConfig, system_prompt: str, max_steps: int) -> AgentOptions:
        thinking, effort = effort_options(role)
        return AgentOptions(
            system_prompt=system_prompt_with_memory(system_prompt, memory),
            compaction_threshold=config.compaction.threshold,
            compaction_keep_turns=config.compaction.keep_recent_turns,
            compaction_policy=config.compaction.policy,
            model=role.model,
            thinking=thinking,
            reasoning_effort=effort,
            max_steps=max_steps,
            prices=config.model_info(role.model).prices,
            prices_cny=prices_in("CNY", role.model, config.model_info(role.model).prices),
            prices_for=prices_for,
            max_tokens=min(role.max_tokens, config.model_info(role.model).max_output),
            workspace=workspace,
            hooks=hooks,
        )

    executor_options = role_options(
        config.executor, DEFAULT_SYSTEM_PROMPT, config.executor.max_steps
    )
    planner_options = None
    if "planner" in providers:
        planner_options = role_options(config.planner, PLANNER_SYSTEM_PROMPT, PLANNER_MAX_STEPS)
    review = config.review_role
    reviewer_options = role_options(review, REVIEWER_SYSTEM_PROMPT, 1)
    # The reviewer's prompt is fixed: the project's memory is not its business.
    reviewer_options.system_prompt = REVIEWER_SYSTEM_PROMPT
    reviewer_options.hooks = None

    def model_for(model: str) -> ModelChoice:
        if subagent_provider is None:
            raise ConfigError("this session cannot run subagents on other models")
        role = dataclasses.replace(config.executor, model=model)
        options = role_options(role, DEFAULT_SYSTEM_PROMPT, config.subagents.max_steps)
        return ModelChoice(subagent_provider(model), options)

    orchestration = OrchestratorOptions(
        gate=GateOptions(mode=config.planner.gate, threshold=config.planner.gate_threshold),
        max_replans=config.planner.max_replans,
        stall_rounds=config.planner.stall_rounds,
        refused_steps=config.executor.refused_steps,
        approver=plan_approver,
        max_cost_usd=config.budget.max_session_usd or None,
    )
    return Controller(
        Options(
            executor_provider=providers["executor"],
            planner_provider=providers.get("planner"),
            tool_registry=registry,
            executor_options=executor_options,
            planner_options=planner_options,
            sink=sink,
            orchestration=orchestration,
            executor_session=sessions.get("executor"),
            planner_session=sessions.get("planner"),
            delegation=_delegation(config),
            on_subagent=on_subagent,
            executor_tools=executor_tools,
            goal_tool=config.goals.enabled,
            writers=writers if config.subagents.writers else None,
            profiles=dict(profiles or {}),
            model_for=model_for,
            executor_state=dict(executor_state or {}),
            reviewer_provider=providers.get("reviewer"),
            reviewer_options=reviewer_options,
            review=ReviewSettings(budget_usd=review.budget_usd, tools=review.tools),
            reviewer_session=sessions.get("reviewer"),
        )
    )


def _delegation(config: Config) -> DelegationLimits | None:
    sub = config.subagents
    if not sub.enabled:
        return None
    return DelegationLimits(
        max_parallel=sub.max_parallel,
        timeout_s=sub.timeout_s,
        max_steps=sub.max_steps,
        diff_chars=sub.diff_chars,
    )


def make_subagent_provider(
    config: Config,
    model: str,
    environ: Mapping[str, str] | None,
    factory: ProviderFactory | None = None,
) -> Provider:
    """A provider for a subagent profile's ``model``, on the executor's ``[[providers]]``
    entry. Raises ConfigError (UnknownModelError) for a model reasonix has no prices for."""
    config.model_info(model)  # an unknown model: say so before building anything
    role = dataclasses.replace(config.executor, model=model)
    return (
        factory("executor", role) if factory is not None else make_provider(config, role, environ)
    )


def mcp_entries(config: Config) -> list[dict[str, Any]]:
    """``[[mcp.servers]]`` from the config as the plain TOML-shaped tables the MCP layer parses
    (the config freezes them into tuples and read-only mappings)."""

    def thaw(value: Any) -> Any:
        if isinstance(value, Mapping):
            return {str(k): thaw(v) for k, v in value.items()}
        if isinstance(value, tuple | list):
            return [thaw(v) for v in value]
        return value

    return [thaw(server) for server in config.mcp.servers]


def mcp_server_configs(
    config: Config,
    workspace: Path,
    environ: Mapping[str, str] | None = None,
    skipped: list[ConfigError] | None = None,
) -> list[McpServerConfig]:
    """Every configured MCP server (see :func:`reasonix.mcp.config.configured_servers`: what an
    untrusted folder's files define is left out; ``${VAR}`` reads only allowed variables; our
    key variables are withheld). Imports nothing of the MCP SDK."""
    from reasonix.mcp.config import configured_servers

    return configured_servers(config, workspace, environ, skipped)


def _as_configured(config: Config, server: McpServerConfig) -> McpServerConfig:
    """A server from outside the config files (an editor's) under the same environment rules
    as configured ones: the allowlist plus the user's ``[environment]``, never our keys."""
    keys = tuple(sorted({p.api_key_env for p in config.providers.values() if p.api_key_env}))
    return dataclasses.replace(
        server,
        withheld_env=keys,
        pass_env=tuple(config.environment.include),
        env={**dict(config.environment.set), **server.env},
    )


#: The notice code of "starting MCP servers (N)…" (frontends may show it as a status line).
MCP_STARTING = "mcp_starting"


async def start_configured_mcp(
    config: Config,
    workspace: Path,
    environ: Mapping[str, str] | None,
    data_dir: Path,
    sink: Sink,
    extra: Sequence[McpServerConfig] = (),
) -> McpManager | None:
    """Start every configured MCP server and the ``extra`` ones (None when there are none). An
    unusable ``.mcp.json`` entry becomes a ``mcp_server_skipped`` notice instead of stopping
    start-up. An extra server whose name is configured already replaces that entry."""
    skipped: list[ConfigError] = []
    servers = mcp_server_configs(config, workspace, environ, skipped)
    if extra:
        names = {s.name for s in extra}
        servers = [s for s in servers if s.name not in names]
        servers += [_as_configured(config, s) for s in extra]
    for problem in skipped:
        sink.emit(NoticeEvent("mcp", "mcp_server_skipped", f"MCP server skipped: {problem}"))
    if not servers:
        return None
    # Starting servers can take seconds: say what is being waited for, never a blank screen.
    count = sum(1 for s in servers if s.enabled)
    if count:
        sink.emit(NoticeEvent("mcp", MCP_STARTING, f"starting MCP servers ({count})…"))
    return await start_mcp(servers, data_dir, sink)


async def start_mcp(servers: list[McpServerConfig], data_dir: Path, sink: Sink) -> McpManager:
    """Start the servers (each bounded by its start-up timeout; a failure is reported, not
    raised); their logs go under ``data_dir/mcp-logs``."""
    from reasonix.mcp import McpManager

    manager = McpManager(servers, data_dir / "mcp-logs", sink)
    await manager.start()
    return manager
