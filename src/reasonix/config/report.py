"""What a loaded configuration says to the user: ``reasonix config`` and missing keys.

:func:`render_config` lists every effective value as ``key = value  # source`` (its provenance
from the loader), hiding the values of header and env tables and of secret-like names, and says
per provider in use whether its key variable is set (never the key). :func:`check_credentials`
names each role whose provider's key variable is unset, and how to set it. Nothing here reads a
file: the :class:`~reasonix.config.schema.Config` holds all it shows.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from reasonix.config import spec as _spec
from reasonix.config.loader import PROJECT_FILE
from reasonix.config.schema import DEEPSEEK_KEY_ENV, Config, ProviderConfig, RoleConfig
from reasonix.config.spec import ArrayOf

__all__ = ["check_credentials", "render_config"]


def _k(name: str) -> str:
    """A name as one segment of a dotted provenance key (quoted unless bare)."""
    return _spec.display((name,))


def check_credentials(config: Config, environ: Mapping[str, str] | None = None) -> list[str]:
    """Human-readable problems with API keys for the roles in use (empty when all is well)."""
    env = os.environ if environ is None else environ
    users: dict[str, list[str]] = {}
    roles: list[tuple[str, RoleConfig]] = [("executor", config.executor)]
    if config.planner.enabled:
        roles.append(("planner", config.planner))
    for role_name, role in roles:
        users.setdefault(role.provider, []).append(role_name)
    problems = []
    for provider_name, role_names in users.items():
        provider = config.providers[provider_name]
        if not provider.api_key_env or provider.api_key(env):
            continue
        var = provider.api_key_env
        hint = ""
        if var == DEEPSEEK_KEY_ENV:
            hint = " (create a key at https://platform.deepseek.com/api_keys)"
        problems.append(
            f"The {' and '.join(role_names)} {'use' if len(role_names) > 1 else 'uses'} provider "
            f'"{provider_name}", which reads its API key from the environment variable {var}, '
            f"but {var} is not set. Set it in your shell, e.g. `export {var}=sk-...`{hint}, or "
            f"point [executor]/[planner] at another [[providers]] entry in {PROJECT_FILE}. "
            "Keys are never read from config files."
        )
    return problems


def _format_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Mapping):
        return json.dumps(dict(value), ensure_ascii=False, sort_keys=True, default=dict)
    if isinstance(value, tuple | list):
        return json.dumps(list(value), ensure_ascii=False)
    if isinstance(value, float):
        return repr(value)
    return json.dumps(value, ensure_ascii=False)


def _effective_items(config: Config) -> list[tuple[str, Any]]:
    items: list[tuple[str, Any]] = []
    for name in _spec.sections():
        section = getattr(config, name)
        for key, sub in _spec.section_of(name).fields.items():
            if isinstance(sub, ArrayOf):
                for entry in getattr(section, key):
                    items.append((f"{name}.{key}.{_k(entry['name'])}", entry))
            else:
                items.append((f"{name}.{key}", getattr(section, key)))
    for provider in config.providers.values():
        for key in _spec.config_keys(ProviderConfig):
            if key != "name":
                items.append((f"providers.{_k(provider.name)}.{key}", getattr(provider, key)))
    shown = {config.executor.model}
    if config.planner.enabled:
        shown.add(config.planner.model)
    model_keys = _spec.model_keys()
    for name, info in config.model_infos.items():
        configured = any(
            config.provenance.get(f"models.{_k(name)}.{key}", "default") != "default"
            for key in model_keys
        )
        if name not in shown and not configured:
            continue
        for key in model_keys:
            holder = info.prices if key.startswith("prices.") else info
            items.append((f"models.{_k(name)}.{key}", getattr(holder, key.removeprefix("prices."))))
    return items


#: tables whose values are credentials as often as not (``Authorization``, ``API_TOKEN``)
_HIDDEN_TABLES = frozenset({"headers", "env"})


def _masked(value: Any, hide: bool = False) -> Any:
    """``value`` for display: the values of header and env tables, and strings under a
    secret-like name, become ``<hidden, N chars>``."""
    from reasonix.redaction import is_secret_name

    if isinstance(value, Mapping):
        return {
            k: _masked(v, hide or k in _HIDDEN_TABLES or is_secret_name(str(k)))
            for k, v in value.items()
        }
    if isinstance(value, str) and hide:
        return f"<hidden, {len(value)} chars>"
    return value


def render_config(config: Config, environ: Mapping[str, str] | None = None) -> list[str]:
    """Effective configuration as ``key = value  # source`` lines, for ``reasonix config``.

    Also shows, per provider in use, whether its API key variable is set (never the key).
    """
    env = os.environ if environ is None else environ
    rows: list[tuple[str, str]] = []
    for key, value in _effective_items(config):
        shown = _format_value(_masked(value, key.rsplit(".", 1)[-1] in _HIDDEN_TABLES))
        rows.append((f"{key} = {shown}", config.provenance.get(key, "default")))
    in_use = {config.executor.provider}
    if config.planner.enabled:
        in_use.add(config.planner.provider)
    for name in sorted(in_use):
        provider = config.providers[name]
        if provider.api_key_env:
            state = "(set)" if provider.api_key(env) else "(NOT SET)"
            rows.append((f"providers.{_k(name)}.api_key = {state}", f"env:{provider.api_key_env}"))
    width = min(max(len(left) for left, _ in rows), 56)
    lines = ["# sources (lowest to highest): default" + "".join(f", {s}" for s in config.sources)]
    lines += [f"{left.ljust(width)}  # {source}" for left, source in rows]
    return lines
