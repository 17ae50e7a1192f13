"""Model clients. ``Provider`` is the protocol; ``OpenAICompatProvider`` speaks chat-completions
(DeepSeek and any OpenAI-compatible endpoint). Import the implementation module lazily: it pulls
in httpx."""

from reasonix.providers.base import Provider
from reasonix.providers.models import ModelInfo, Prices, get_model_info, price_usage

__all__ = ["ModelInfo", "Prices", "Provider", "get_model_info", "price_usage"]
