"""Configuration: typed, frozen settings merged from defaults, user file, project file and flags.

``load_config()`` returns a :class:`Config`; ``render_config()`` explains where each value came
from; ``check_credentials()`` lists missing API keys in words a user can act on.
"""

from __future__ import annotations

from reasonix.config.loader import (
    CONFIG_DIR_ENV,
    PROJECT_FILE,
    USER_FILE,
    check_credentials,
    load_config,
    render_config,
    user_config_path,
)
from reasonix.config.schema import (
    EFFORTS,
    GATES,
    PERMISSION_MODES,
    PROVIDER_KINDS,
    BudgetConfig,
    CompactionConfig,
    Config,
    Effort,
    ExecutorConfig,
    Gate,
    McpConfig,
    PermissionMode,
    PermissionsConfig,
    PlannerConfig,
    ProviderConfig,
    RoleConfig,
    WorkspaceConfig,
)

__all__ = [
    "CONFIG_DIR_ENV",
    "EFFORTS",
    "GATES",
    "PERMISSION_MODES",
    "PROJECT_FILE",
    "PROVIDER_KINDS",
    "USER_FILE",
    "BudgetConfig",
    "CompactionConfig",
    "Config",
    "Effort",
    "ExecutorConfig",
    "Gate",
    "McpConfig",
    "PermissionMode",
    "PermissionsConfig",
    "PlannerConfig",
    "ProviderConfig",
    "RoleConfig",
    "WorkspaceConfig",
    "check_credentials",
    "load_config",
    "render_config",
    "user_config_path",
]
