"""Configuration: typed, frozen settings merged from defaults, user file, project file and flags.

``load_config()`` returns a :class:`Config`; ``render_config()`` explains where each value came
from; ``check_credentials()`` lists missing API keys in words a user can act on;
``describe_keys()`` lists every key. Keys are declared once, in :mod:`reasonix.config.schema`;
whether a folder's project files count is :mod:`reasonix.config.trust`.
"""

from __future__ import annotations

from reasonix.config.loader import (
    CONFIG_DIR_ENV,
    PROJECT_FILE,
    USER_FILE,
    load_config,
    user_config_path,
)
from reasonix.config.report import check_credentials, render_config
from reasonix.config.schema import (
    DEEPSEEK_KEY_ENV,
    EFFORTS,
    GATES,
    PERMISSION_MODES,
    PROVIDER_KINDS,
    BudgetConfig,
    CheckpointsConfig,
    CompactionConfig,
    Config,
    Effort,
    EnvironmentConfig,
    ExecutorConfig,
    Gate,
    LimitsConfig,
    McpConfig,
    McpServerConfig,
    PermissionMode,
    PermissionsConfig,
    PlannerConfig,
    ProviderConfig,
    RoleConfig,
    TrustConfig,
    WebConfig,
    WorkspaceConfig,
    setting,
)
from reasonix.config.spec import describe_keys

__all__ = [
    "CONFIG_DIR_ENV",
    "DEEPSEEK_KEY_ENV",
    "EFFORTS",
    "GATES",
    "PERMISSION_MODES",
    "PROJECT_FILE",
    "PROVIDER_KINDS",
    "USER_FILE",
    "BudgetConfig",
    "CheckpointsConfig",
    "CompactionConfig",
    "Config",
    "Effort",
    "EnvironmentConfig",
    "ExecutorConfig",
    "Gate",
    "LimitsConfig",
    "McpConfig",
    "McpServerConfig",
    "PermissionMode",
    "PermissionsConfig",
    "PlannerConfig",
    "ProviderConfig",
    "RoleConfig",
    "TrustConfig",
    "WebConfig",
    "WorkspaceConfig",
    "check_credentials",
    "describe_keys",
    "load_config",
    "render_config",
    "setting",
    "user_config_path",
]
