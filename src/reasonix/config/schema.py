"""The typed, frozen shape of an effective configuration.

These dataclasses are what the rest of reasonix reads; nothing here does I/O. The loader
(:mod:`reasonix.config.loader`) builds a :class:`Config` from built-in defaults, the user's
``config.toml``, the project's ``reasonix.toml`` and command-line overrides, in that order.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal, TypeAlias

from reasonix.providers.models import ModelInfo, get_model_info

Effort: TypeAlias = Literal["low", "medium", "high", "max", "off"]
Gate: TypeAlias = Literal["auto", "explicit", "always", "off"]
PermissionMode: TypeAlias = Literal["ask", "auto-edit", "plan", "yolo"]

#: Valid values of the enum-like keys, in the order error messages list them.
EFFORTS: tuple[str, ...] = ("low", "medium", "high", "max", "off")
GATES: tuple[str, ...] = ("auto", "explicit", "always", "off")
PERMISSION_MODES: tuple[str, ...] = ("ask", "auto-edit", "plan", "yolo")
#: Wire protocols a ``[[providers]]`` entry may speak. DeepSeek speaks the OpenAI one.
PROVIDER_KINDS: tuple[str, ...] = ("openai",)

_EMPTY: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class ProviderConfig:
    """One model endpoint. The key is read from ``api_key_env`` in the environment, never from a
    file; an empty ``api_key_env`` means the endpoint needs no key (a local server)."""

    name: str
    kind: str = "openai"
    base_url: str = ""
    api_key_env: str = ""
    headers: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    extra_body: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)

    def api_key(self, environ: Mapping[str, str]) -> str | None:
        """The key from ``environ``, or None when unset/empty or when none is needed."""
        if not self.api_key_env:
            return None
        return environ.get(self.api_key_env) or None


@dataclass(frozen=True, slots=True)
class RoleConfig:
    """What one agent role runs on: a provider name, a model name and a thinking effort."""

    provider: str
    model: str
    effort: Effort = "high"

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
    """The executor role; ``max_steps`` bounds model ↔ tool rounds per turn."""

    max_steps: int = 50


@dataclass(frozen=True, slots=True)
class PlannerConfig(RoleConfig):
    """The planner role and the gate that decides when it runs.

    ``gate``: ``auto`` (scored request or stall), ``explicit`` (only when asked), ``always``,
    ``off``. ``stall_rounds``: executor rounds without progress before a re-plan;
    ``gate_threshold``: multi-step score at which ``auto`` plans; ``max_replans`` per turn.
    """

    enabled: bool = True
    gate: Gate = "auto"
    max_replans: int = 2
    stall_rounds: int = 4
    gate_threshold: int = 3


@dataclass(frozen=True, slots=True)
class PermissionsConfig:
    """Approval mode and rule patterns such as ``bash(git status*)``."""

    mode: PermissionMode = "ask"
    allow: tuple[str, ...] = ()
    ask: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class WorkspaceConfig:
    """Extra workspace roots besides the project dir, and patterns the tools may not read —
    added to the sandbox's built-in list (``.env``, keys, certificates, …), never replacing it."""

    roots: tuple[str, ...] = ()
    read_deny: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class CompactionConfig:
    """Compact when the prompt passes ``threshold`` of the context window; keep the last
    ``keep_recent_turns`` user turns verbatim."""

    threshold: float = 0.8
    keep_recent_turns: int = 4


@dataclass(frozen=True, slots=True)
class BudgetConfig:
    """Stop a session once it has spent ``max_session_usd`` (all roles, USD); 0 means no
    limit."""

    max_session_usd: float = 0.0


@dataclass(frozen=True, slots=True)
class McpConfig:
    """MCP servers as validated plain mappings; the MCP layer interprets them."""

    servers: tuple[Mapping[str, Any], ...] = ()


@dataclass(frozen=True, slots=True)
class Config:
    """The effective configuration.

    ``model_infos`` holds every preset plus every ``[models."name"]`` table (config overrides
    presets key by key). ``provenance`` maps each effective dotted key (``executor.model``,
    ``providers.deepseek.base_url``, ``models.deepseek-v4-flash.context_window``,
    ``mcp.servers.time``) to where its value came from: ``default``, ``user:<path>``,
    ``project:<path>`` or ``flag``. ``sources`` lists the files that were read.
    """

    executor: ExecutorConfig
    planner: PlannerConfig
    providers: Mapping[str, ProviderConfig]
    model_infos: Mapping[str, ModelInfo]
    permissions: PermissionsConfig = field(default_factory=PermissionsConfig)
    workspace: WorkspaceConfig = field(default_factory=WorkspaceConfig)
    compaction: CompactionConfig = field(default_factory=CompactionConfig)
    budget: BudgetConfig = field(default_factory=BudgetConfig)
    mcp: McpConfig = field(default_factory=McpConfig)
    provenance: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    sources: tuple[str, ...] = ()

    def provider_for(self, role: RoleConfig) -> ProviderConfig:
        """The provider a role names (the loader has checked it exists)."""
        return self.providers[role.provider]

    def model_info(self, name: str) -> ModelInfo:
        """Limits and prices of ``name`` (the loader has checked roles' models exist)."""
        return get_model_info(name, self.model_infos)
