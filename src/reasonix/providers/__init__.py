"""Model clients. ``Provider`` is the protocol; ``OpenAICompatProvider`` speaks chat-completions
(DeepSeek and any OpenAI-compatible endpoint). Import the implementation module lazily: it pulls
in httpx."""

from __future__ import annotations

import importlib
from typing import Any

from reasonix.providers.base import Provider
from reasonix.providers.models import ModelInfo, Prices, get_model_info, price_usage

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
    raise AttributeError(f"module 'reasonix.providers' has no attribute {name!r}")
