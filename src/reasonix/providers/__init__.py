"""Model clients. ``Provider`` is the protocol; ``OpenAICompatProvider`` speaks chat-completions
(DeepSeek and any OpenAI-compatible endpoint). Both load on first use: the implementation pulls
in httpx, the protocol the message types, and the configuration (which the interactive prompt
loads before it is drawn) needs neither, only the model table."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from reasonix.providers.models import ModelInfo, Prices, get_model_info, price_usage

if TYPE_CHECKING:
    from reasonix.providers.base import Provider
    from reasonix.providers.openai_compat import OpenAICompatProvider

__all__ = [
    "ModelInfo",
    "OpenAICompatProvider",
    "Prices",
    "Provider",
    "get_model_info",
    "price_usage",
]


def __getattr__(name: str) -> Any:
    # Loaded on first use so that importing the package does not import httpx.
    if name == "OpenAICompatProvider":
        return importlib.import_module("reasonix.providers.openai_compat").OpenAICompatProvider
    if name == "Provider":
        return importlib.import_module("reasonix.providers.base").Provider
    raise AttributeError(f"module 'reasonix.providers' has no attribute {name!r}")
