"""The typed, frozen shape of an effective configuration — and the specification of every key.

These dataclasses are what the rest of reasonix reads, and they are also the one place a
configuration key is declared: its name (the field), its type (the annotation: ``str``, ``int``,
``float``, ``bool``, a ``Literal`` of choices, ``tuple[str, ...]``, ``Mapping[str, str]``), its
default, its bounds and its help text (:func:`setting`). Validation, defaults, the provenance shown
by ``reasonix config``, command-line coercion and ``reasonix config --keys`` all derive from them
(:mod:`reasonix.config.spec`). Nothing here does I/O.

To add a key, add a field with :func:`setting` to its section. To add a section (``[sandbox]``),
write a frozen dataclass whose fields all have defaults and add it to :class:`Config` with
``field(default_factory=TheSection)``: the loader validates, merges and builds it like the others.

Who may set a key is declared too (``project=``): ``"trusted"`` (the default: a project file sets
it once the user trusts the folder), ``"add"`` (a project may only add items, even untrusted:
deny rules), ``"lower"`` (a project may only lower the value, even untrusted: a budget) and
``"never"`` (only the user's own config and flags: the trust settings themselves).

It runs past 500 lines because it is the whole specification in one place, on purpose: every
section and key with its default, bounds and help text, so that nothing else declares a key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal, TypeAlias, TypeVar, get_args

from reasonix.config.hooks import HookGroup
from reasonix.errors import ConfigError
from reasonix.providers.models import (
    DEFAULT_EXECUTOR_MODEL,
    DEFAULT_MAX_TOKENS,
    DEFAULT_PLANNER_MODEL,
    ModelInfo,
    get_model_info,
)

Effort: TypeAlias = Literal["low", "medium", "high", "max", "off"]
Gate: TypeAlias = Literal["auto", "explicit", "always", "off"]
#: the same values as :class:`reasonix.safety.permissions.Mode` (a test holds them equal)
PermissionMode: TypeAlias = Literal["ask", "auto-edit", "auto", "plan", "yolo"]
ProviderKind: TypeAlias = Literal["openai"]
ProjectRule: TypeAlias = Literal["trusted", "add", "lower", "never"]
ImageDetail: TypeAlias = Literal["auto", "low", "high", "original"]
SearchBackend: TypeAlias = Literal["deepseek", "off"]
SandboxMode: TypeAlias = Literal["auto", "bwrap", "off"]
CompactionPolicy: TypeAlias = Literal["economic", "window"]

#: Valid values of the enum-like keys, in the order error messages list them.
EFFORTS: tuple[str, ...] = get_args(Effort)
GATES: tuple[str, ...] = get_args(Gate)
PERMISSION_MODES: tuple[str, ...] = get_args(PermissionMode)
SANDBOX_MODES: tuple[str, ...] = get_args(SandboxMode)
#: Wire protocols a ``[[providers]]`` entry may speak. DeepSeek speaks the OpenAI one.
PROVIDER_KINDS: tuple[str, ...] = get_args(ProviderKind)
#: ``type`` values of an MCP server entry: stdio, the streamable HTTP spellings other agents
#: write, and the legacy ``sse`` (refused with a clear message by the MCP layer).
MCP_TRANSPORT_TYPES: tuple[str, ...] = (
    "stdio",
    "http",
    "streamable-http",
    "streamable_http",
    "streamableHttp",
    "sse",
)

DEEPSEEK_KEY_ENV = "DEEPSEEK_API_KEY"
DEEPSEEK_BASE_URL = "https://api.deepseek.com"
DEFAULT_STARTUP_TIMEOUT = 10.0
DEFAULT_CALL_TIMEOUT = 60.0

_EMPTY: Mapping[str, Any] = MappingProxyType({})
_T = TypeVar("_T")


def setting(
    default: _T,
    doc: str,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    what: str = "",
    project: ProjectRule = "trusted",
    item: type | None = None,
) -> _T:
    """Declare one configuration key: its default and help text, optional numeric bounds, the
    noun used in an error about a wrong choice (``what``) and who may set it (``project``, see
    the module docstring). ``item`` makes the key an array of tables (``[[mcp.servers]]``)
    whose entries have that dataclass's keys and a unique ``name``. Mutable defaults are not
    allowed: use tuples and ``_EMPTY``."""
    meta = MappingProxyType(
        {
            "doc": doc,
            "minimum": minimum,
            "maximum": maximum,
            "what": what,
            "project": project,
            "item": item,
        }
    )
    if isinstance(default, Mapping):
        frozen = default
        return field(default_factory=lambda: frozen, metadata=meta)
    return field(default=default, metadata=meta)


def internal(default: _T) -> _T:
    """A field that is part of the record but not a configuration key (set by the program)."""
    if isinstance(default, Mapping):
        frozen = default
        return field(default_factory=lambda: frozen, metadata={"config": False})
    return field(default=default, metadata={"config": False})


@dataclass(frozen=True, slots=True)
class ProviderConfig:
    """One model endpoint (``[[providers]]``, merged by ``name``). The key is read from
    ``api_key_env`` in the environment, never from a file; an empty ``api_key_env`` means the
    endpoint needs no key (a local server)."""

    name: str = setting("", "the name roles refer to ([executor] provider = ...)")
    kind: ProviderKind = setting("openai", "wire protocol", what="provider kind")
    base_url: str = setting("", "the OpenAI-compatible endpoint, e.g. https://api.deepseek.com")
    api_key_env: str = setting("", "environment variable holding the API key ('' for none)")
    headers: Mapping[str, str] = setting(_EMPTY, "extra HTTP headers sent on every request")
    extra_body: Mapping[str, Any] = setting(_EMPTY, "extra JSON fields merged into each request")

    def api_key(self, environ: Mapping[str, str]) -> str | None:
        """The key from ``environ``, or None when unset/empty or when none is needed."""
        if not self.api_key_env:
            return None
        return environ.get(self.api_key_env) or None


#: The provider that exists without any configuration.
DEFAULT_PROVIDERS: tuple[ProviderConfig, ...] = (
    ProviderConfig(name="deepseek", base_url=DEEPSEEK_BASE_URL, api_key_env=DEEPSEEK_KEY_ENV),
)


@dataclass(frozen=True, slots=True)
class RoleConfig:
    """What one agent role runs on: a provider name, a model name and a thinking effort."""

    provider: str = setting("deepseek", "a [[providers]] name")
    model: str = setting(DEFAULT_EXECUTOR_MODEL, "model name (a preset or a [models] table)")
    effort: Effort = setting(
        "high",
        "thinking effort: low, high, max, or off (no thinking); medium is accepted and means high",
        what="effort",
    )
    max_tokens: int = setting(
        DEFAULT_MAX_TOKENS,
        "output limit per request, reasoning included (large, so big files fit in tool "
        "arguments); capped at the model's max_output",
        minimum=1,
    )

    @property
    def thinking(self) -> bool:
        """False when ``effort = "off"``: the role runs without thinking."""
        return self.effort != "off"

    @property
    def reasoning_effort(self) -> Literal["low", "high", "max"] | None:
        """The level sent to the server: None when thinking is off; ``medium`` means ``high``
        (DeepSeek maps it so; we send the level it runs at)."""
        if self.effort == "off":
            return None
        return "high" if self.effort == "medium" else self.effort


@dataclass(frozen=True, slots=True)
class ExecutorConfig(RoleConfig):
    """The executor role (``[executor]``); ``max_steps`` bounds model ↔ tool rounds per turn;
    ``refused_steps``: steps in a row whose every call was refused before the turn ends as
    ``refused`` (a new plan cannot make a refused call allowed, so the planner is not paid)."""

    max_steps: int = setting(50, "model <-> tool rounds per turn", minimum=1)
    refused_steps: int = setting(
        2, "steps in a row with every call refused before the turn ends", minimum=1
    )


@dataclass(frozen=True, slots=True)
class PlannerConfig(RoleConfig):
    """The planner role and the gate that decides when it runs (``[planner]``).

    ``gate``: ``auto`` (scored request or stall), ``explicit`` (only when asked), ``always``,
    ``off``. ``stall_rounds``: executor rounds without progress before a re-plan;
    ``gate_threshold``: multi-step score at which ``auto`` plans; ``max_replans`` per turn.
    """

    model: str = setting(DEFAULT_PLANNER_MODEL, "model name (a preset or a [models] table)")
    enabled: bool = setting(True, "false runs the executor alone")
    gate: Gate = setting("auto", "when the planner runs", what="gate")
    max_replans: int = setting(2, "re-plans per turn", minimum=0)
    stall_rounds: int = setting(4, "executor rounds without progress before a re-plan", minimum=1)
    gate_threshold: int = setting(3, "multi-step score at which gate=auto plans", minimum=1)


@dataclass(frozen=True, slots=True)
class ReviewConfig(RoleConfig):
    """Auto mode's reviewer (``[review]``, :mod:`reasonix.control.review`): the role's model
    (``provider`` and ``model`` empty: the executor's), what it may spend per session before
    every approval asks the user again (``budget_usd``, 0 = no limit; a project may only lower
    it) and the tools it answers for (``tools``: tool names or categories such as ``bash``,
    ``edit``, ``web``; ``*`` for all; the others always ask)."""

    provider: str = setting("", "a [[providers]] name ('' = the executor's)")
    model: str = setting("", "model name ('' = the executor's)")
    effort: Effort = setting(
        "low", "thinking effort: low, high, max, or off (no thinking)", what="effort"
    )
    max_tokens: int = setting(8192, "output limit per review, reasoning included", minimum=1)
    budget_usd: float = setting(
        0.05,
        "reviewer spend per session before auto asks you (USD, 0 = no limit)",
        minimum=0,
        project="lower",
    )
    tools: tuple[str, ...] = setting(("*",), "tools or categories the reviewer answers for")


@dataclass(frozen=True, slots=True)
class PermissionsConfig:
    """Approval mode and rule patterns such as ``bash(git status*)`` (``[permissions]``). A
    project file may add deny rules but never remove the user's."""

    mode: PermissionMode = setting("ask", "approval mode", what="mode")
    allow: tuple[str, ...] = setting((), "rules allowed without asking")
    ask: tuple[str, ...] = setting((), "rules that always ask", project="add")
    deny: tuple[str, ...] = setting((), "rules always refused", project="add")


@dataclass(frozen=True, slots=True)
class WorkspaceConfig:
    """Extra workspace roots besides the project dir, and patterns the tools may not read —
    added to the sandbox's built-in list (``.env``, keys, certificates, …), never replacing it."""

    roots: tuple[str, ...] = setting((), "extra folders the tools may use")
    read_deny: tuple[str, ...] = setting((), "extra patterns the tools may not read", project="add")


@dataclass(frozen=True, slots=True)
class CompactionConfig:
    """When to compact: ``economic`` (default) as soon as the expected saving over the coming
    steps repays the summary and the cache miss after it (:mod:`reasonix.agent.economics`), and
    in any case at ``threshold`` of the context window; ``window`` only at the threshold,
    keeping the last ``keep_recent_turns`` user turns verbatim."""

    policy: CompactionPolicy = setting(
        "economic",
        "economic: when it pays (and at the threshold); window: at the threshold only",
        what="compaction policy",
    )
    threshold: float = setting(0.8, "fraction of the context window", minimum=0.01, maximum=1.0)
    keep_recent_turns: int = setting(4, "user turns kept verbatim", minimum=0)


@dataclass(frozen=True, slots=True)
class BudgetConfig:
    """Stop a session once it has spent ``max_session_usd`` (all roles, USD); 0 means no
    limit. A project file may only lower it."""

    max_session_usd: float = setting(
        0.0, "stop the session at this cost (USD, 0 = no limit)", minimum=0, project="lower"
    )


@dataclass(frozen=True, slots=True)
class LimitsConfig:
    """Bounds on what one model response may ask (``[limits]``; the same names as
    :class:`reasonix.tools.limits.ToolLimits`). A project file may only lower them."""

    max_calls_per_response: int = setting(
        64, "tool calls run from one response", minimum=1, project="lower"
    )
    max_argument_bytes: int = setting(
        1_000_000, "size of one call's JSON arguments", minimum=1, project="lower"
    )
    max_argument_depth: int = setting(
        64, "nesting depth of one call's JSON arguments", minimum=1, project="lower"
    )
    max_write_bytes: int = setting(
        512_000,
        "content one write_file/edit_file/multi_edit call may write",
        minimum=1,
        project="lower",
    )
    max_step_result_chars: int = setting(
        200_000, "tool-result characters one step adds, together", minimum=1, project="lower"
    )
    max_request_chars: int = setting(
        8_000_000,
        "characters one request may carry (larger: not sent)",
        minimum=1,
        project="lower",
    )
    max_concurrent_tools: int = setting(
        8, "tool calls (and their processes) running at once", minimum=1, project="lower"
    )
    max_image_bytes: int = setting(
        8_000_000,
        "size of one image read_file shows the model (DeepSeek takes at most 32 MiB inline, "
        "64 MiB through its Files API)",
        minimum=1,
        maximum=64 * 1024 * 1024,
        project="lower",
    )
    max_images_per_step: int = setting(
        4, "images the tool results of one step may show the model", minimum=0, project="lower"
    )
    image_detail: ImageDetail = setting(
        "auto",
        "detail of the images read_file shows: low (512x512, fewer tokens), high/original, "
        "or auto (the server's default)",
        what="image detail",
    )


@dataclass(frozen=True, slots=True)
class McpServerConfig:
    """One MCP server (``[[mcp.servers]]`` or a ``.mcp.json`` entry): either a local command
    spoken to over stdio, or a streamable HTTP ``url``.

    ``env`` is added to the allowlisted environment the server gets
    (:mod:`reasonix.safety.environment`); ``pass_env`` are the user's ``[environment] include``
    patterns; ``withheld_env`` names variables the host never passes (its own API-key
    variables) unless ``env`` sets them explicitly. ``startup_timeout`` bounds the
    spawn + ``initialize`` + ``tools/list`` handshake; ``call_timeout`` bounds each
    ``tools/call``. ``source`` names where the entry came from, for error messages.
    """

    name: str = setting("", "server name (tools are called mcp__<name>__<tool>)")
    command: str | None = setting(None, "stdio: the program to run")
    args: tuple[str, ...] = setting((), "stdio: its arguments")
    env: Mapping[str, str] = setting(_EMPTY, "stdio: variables added to its environment")
    cwd: str | None = setting(None, "stdio: its working folder")
    url: str | None = setting(None, "http: the streamable HTTP endpoint")
    headers: Mapping[str, str] = setting(_EMPTY, "http: headers sent on every request")
    startup_timeout: float = setting(DEFAULT_STARTUP_TIMEOUT, "seconds to start", minimum=0)
    call_timeout: float = setting(DEFAULT_CALL_TIMEOUT, "seconds per tool call", minimum=0)
    enabled: bool = setting(True, "false keeps the entry but does not start it")
    type: str | None = setting(None, "transport: stdio or http (default: from command/url)")
    trust_annotations: bool = setting(
        False,
        "trust the server's tool annotations (a readOnlyHint tool runs unasked, also in plan mode)",
        project="never",
    )
    source: str = internal("")
    withheld_env: tuple[str, ...] = internal(())
    pass_env: tuple[str, ...] = internal(())

    def __post_init__(self) -> None:
        if not self.name or not self.name.strip():
            raise ConfigError("an MCP server needs a non-empty name", file=self.source or None)
        if (self.command is None) == (self.url is None):
            raise ConfigError(
                f"MCP server {self.name!r} needs exactly one of 'command' (stdio) or 'url' (HTTP)",
                file=self.source or None,
                key=self.name,
            )
        for label, value in (
            ("startup_timeout", self.startup_timeout),
            ("call_timeout", self.call_timeout),
        ):
            if not value > 0:
                raise ConfigError(
                    f"{label} must be a positive number of seconds, got {value!r}",
                    file=self.source or None,
                    key=f"{self.name}.{label}",
                )

    @property
    def transport(self) -> Literal["stdio", "http"]:
        """``stdio`` for a command, ``http`` for a URL."""
        return "stdio" if self.command is not None else "http"

    def describe(self) -> str:
        """A one-line human description: the command line or the URL."""
        if self.command is not None:
            return " ".join([self.command, *self.args])
        return str(self.url)


@dataclass(frozen=True, slots=True)
class CheckpointsConfig:
    """Snapshots of the workspace before each step, so any step can be undone (``/undo``,
    ``/rewind``, ``reasonix rewind``). Only the user's own config turns them off."""

    enabled: bool = setting(True, "snapshot the workspace before every step", project="never")
    max_file_mb: float = setting(20.0, "files larger than this (MB) are not snapshotted", minimum=0)
    exclude: tuple[str, ...] = setting(
        (),
        "gitignore-style patterns not snapshotted, besides .venv/, node_modules/, build outputs "
        "(!build/ re-includes one)",
    )
    keep_days: float = setting(14.0, "snapshots older than this (days) are pruned", minimum=0)
    max_store_mb: float = setting(
        2048.0, "the most one folder's snapshots may take (MB); the oldest go first", minimum=0
    )


@dataclass(frozen=True, slots=True)
class McpConfig:
    """MCP servers (``[[mcp.servers]]``, validated plain mappings the MCP layer interprets) and
    which environment variables ``${VAR}`` in an entry may read.

    ``expand_env`` is the user's: a project entry may expand only the variables listed there;
    an entry in the user's own config may expand any variable but our providers' key variables,
    unless listed there too.
    """

    servers: tuple[Mapping[str, Any], ...] = setting((), "MCP servers", item=McpServerConfig)
    expand_env: tuple[str, ...] = setting(
        (), "variables ${VAR} in MCP entries may read (user config only)", project="never"
    )


@dataclass(frozen=True, slots=True)
class EnvironmentConfig:
    """What subprocesses (bash, MCP servers, git) get besides the built-in allowlist of
    :mod:`reasonix.safety.environment` (``[environment]``, user config only)."""

    include: tuple[str, ...] = setting(
        (), "also pass these variables through (fnmatch patterns)", project="never"
    )
    set: Mapping[str, str] = setting(
        _EMPTY, "variables to set in every subprocess", project="never"
    )


@dataclass(frozen=True, slots=True)
class WebConfig:
    """``web_fetch`` (``[web]``): its limits, and the user's exceptions to the rule that
    loopback and private addresses are refused. The exceptions are the user's alone (a project
    file cannot open the user's network to the model); a project may only lower the limits."""

    allow_private: bool = setting(
        False, "web_fetch may reach loopback and private addresses", project="never"
    )
    allow_hosts: tuple[str, ...] = setting(
        (), "hosts, addresses or networks web_fetch may reach though private", project="never"
    )
    timeout: float = setting(30.0, "seconds for one fetch", minimum=1, project="lower")
    max_bytes: int = setting(5_000_000, "bytes read per page", minimum=1024, project="lower")
    search: SearchBackend = setting(
        "deepseek",
        "web_search backend: deepseek (DeepSeek's Search API on the executor's provider, "
        "$0.75 per 1,000 searches) or off (no web_search tool)",
        what="search backend",
    )


@dataclass(frozen=True, slots=True)
class ServeConfig:
    """``reasonix serve`` (``[serve]``, the user's own config only: a project file must not
    choose how the dashboard is reached)."""

    password_env: str = setting(
        "",
        "environment variable holding the dashboard password (needed to bind a non-loopback "
        "address; --password-env overrides)",
        project="never",
    )


@dataclass(frozen=True, slots=True)
class SubagentsConfig:
    """The ``task`` tool (``[subagents]``): read-only child agents on the executor's model,
    their usage stamped ``subagent``. A project may only lower the limits."""

    enabled: bool = setting(True, "offer the executor the task tool")
    max_parallel: int = setting(4, "children running at once", minimum=1, project="lower")
    timeout_s: float = setting(300.0, "seconds one child may run", minimum=1, project="lower")
    max_steps: int = setting(30, "model steps one child may take", minimum=1, project="lower")
    writers: bool = setting(
        True, "task(read_only=false) children edit a private copy; the parent applies the diff"
    )
    diff_chars: int = setting(
        12_000, "characters of a writer child's diff the parent sees", minimum=500, project="lower"
    )


@dataclass(frozen=True, slots=True)
class JobsConfig:
    """Background shell jobs (``[jobs]``: ``bash`` with ``run_in_background``). They end with
    the session unless kept; only the user's own config may keep them."""

    keep_on_exit: bool = setting(
        False, "leave background jobs running when the session ends", project="never"
    )
    max_running: int = setting(8, "background jobs running at once", minimum=1, project="lower")


@dataclass(frozen=True, slots=True)
class GoalsConfig:
    """Goals (``[goals]``): ``/goal`` and ``run --goal``, autonomous work over several turns,
    each ending with the model's ``update_goal`` report. A project may only lower the cap."""

    enabled: bool = setting(True, "offer the executor the update_goal tool (goals)")
    max_turns: int = setting(
        10, "turns a goal may take when it names no cap", minimum=1, project="lower"
    )


@dataclass(frozen=True, slots=True)
class SandboxConfig:
    """How shell commands are confined (``[sandbox]``, the user's own config and flags only: a
    project file cannot loosen it). See :mod:`reasonix.safety.confinement`."""

    bash: SandboxMode = setting(
        "auto",
        "auto: bubblewrap where it works; bwrap: required (commands refused without it); off",
        what="sandbox mode",
        project="never",
    )
    network: bool = setting(False, "commands may reach the network", project="never")
    allow_read: tuple[str, ...] = setting(
        (), "more folders or files commands may read (never ~/.ssh and the like)", project="never"
    )
    allow_unconfined: bool = setting(
        False,
        "accept that yolo mode and --yes run commands unconfined where bubblewrap is missing",
        project="never",
    )
    max_processes: int = setting(
        512, "processes one command may run at once (0 = no bound)", minimum=0, project="never"
    )
    max_memory_mb: int = setting(
        16384, "address space per process, MB (0 = no bound)", minimum=0, project="never"
    )


@dataclass(frozen=True, slots=True)
class TrustConfig:
    """Folders whose project files (``reasonix.toml``, ``.mcp.json``) the user trusts without
    being asked, for headless use (``[trust]``, user config only). A folder answered "yes" at
    the interactive trust question is remembered separately, with a hash of its files."""

    folders: tuple[str, ...] = setting(
        (), "trusted project folders (and the folders below them)", project="never"
    )


Currency: TypeAlias = Literal["USD", "CNY"]


@dataclass(frozen=True, slots=True)
class UiConfig:
    """How the terminal app shows things (``[ui]``): ``currency`` of the costs it shows
    (DeepSeek publishes a USD and a CNY price list; budgets stay in USD)."""

    currency: Currency = setting("USD", "currency of the costs shown: USD or CNY", what="currency")


@dataclass(frozen=True, slots=True)
class Config:
    """The effective configuration.

    ``model_infos`` holds every preset plus every ``[models."name"]`` table (config overrides
    presets key by key). ``provenance`` maps each effective dotted key (``executor.model``,
    ``providers.deepseek.base_url``, ``models.deepseek-v4-flash.context_window``,
    ``mcp.servers.time``) to where its value came from: ``default``, ``user:<path>``,
    ``project:<path>`` or ``flag``; ``item_provenance`` does the same per item of a list key
    (``permissions.allow`` -> ``{"bash(git status*)": "user:<path>"}``), whose items may come
    from several layers. ``sources`` lists the files that were read. ``hooks`` are
    the ``[[hooks.EVENT]]`` groups of the user's file and (when trusted) the project's. ``ignored``
    lists, in words, the project settings that were not applied (an untrusted folder, or a
    setting a project may not make); ``trusted`` says whether the project folder was trusted.
    """

    executor: ExecutorConfig = field(default_factory=ExecutorConfig)
    planner: PlannerConfig = field(default_factory=PlannerConfig)
    review: ReviewConfig = field(default_factory=ReviewConfig)
    providers: Mapping[str, ProviderConfig] = field(
        default_factory=lambda: MappingProxyType({p.name: p for p in DEFAULT_PROVIDERS}),
        metadata={"toml": "providers", "shape": "named_array", "item": ProviderConfig},
    )
    model_infos: Mapping[str, ModelInfo] = field(
        default_factory=lambda: _EMPTY,
        metadata={"toml": "models", "shape": "models"},
    )
    permissions: PermissionsConfig = field(default_factory=PermissionsConfig)
    workspace: WorkspaceConfig = field(default_factory=WorkspaceConfig)
    compaction: CompactionConfig = field(default_factory=CompactionConfig)
    budget: BudgetConfig = field(default_factory=BudgetConfig)
    checkpoints: CheckpointsConfig = field(default_factory=CheckpointsConfig)
    limits: LimitsConfig = field(default_factory=LimitsConfig)
    mcp: McpConfig = field(default_factory=McpConfig)
    environment: EnvironmentConfig = field(default_factory=EnvironmentConfig)
    web: WebConfig = field(default_factory=WebConfig)
    subagents: SubagentsConfig = field(default_factory=SubagentsConfig)
    serve: ServeConfig = field(default_factory=ServeConfig)
    jobs: JobsConfig = field(default_factory=JobsConfig)
    goals: GoalsConfig = field(default_factory=GoalsConfig)
    sandbox: SandboxConfig = field(default_factory=SandboxConfig)
    trust: TrustConfig = field(default_factory=TrustConfig)
    ui: UiConfig = field(default_factory=UiConfig)
    provenance: Mapping[str, str] = internal(_EMPTY)
    item_provenance: Mapping[str, Mapping[str, str]] = internal(_EMPTY)
    sources: tuple[str, ...] = internal(())
    ignored: tuple[str, ...] = internal(())
    trusted: bool = internal(True)
    hooks: tuple[HookGroup, ...] = internal(())

    def provider_for(self, role: RoleConfig) -> ProviderConfig:
        """The provider a role names (the loader has checked it exists)."""
        return self.providers[role.provider]

    @property
    def review_role(self) -> ReviewConfig:
        """``[review]`` with the executor's provider and model where it names none."""
        import dataclasses

        return dataclasses.replace(
            self.review,
            provider=self.review.provider or self.executor.provider,
            model=self.review.model or self.executor.model,
        )

    def model_info(self, name: str) -> ModelInfo:
        """Limits and prices of ``name`` (the loader has checked roles' models exist)."""
        return get_model_info(name, self.model_infos)
