"""The provider contract: stream one request, yield :mod:`reasonix.messages` stream events.

A provider is an authenticated client for one model. It yields ``TextDelta``/``ReasoningDelta``/
``ToolCall*`` events as they arrive, ``StreamRetry`` before each retry, ``UsageReported`` when
usage is known, and ends with exactly one ``StreamFinished`` carrying the assembled assistant
message. A stream that breaks raises a :class:`reasonix.errors.ProviderError` instead of finishing;
half-streamed tool calls are never reported complete.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol, runtime_checkable

from reasonix.messages import ModelRequest, StreamEvent
from reasonix.providers.models import ModelInfo


@runtime_checkable
class Provider(Protocol):
    @property
    def model(self) -> str:
        """The model name requests go to (``ModelRequest.model`` may override it)."""
        ...

    @property
    def info(self) -> ModelInfo:
        """Context window, output limit and prices of :attr:`model`."""
        ...

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]: ...


@runtime_checkable
class FileUploader(Protocol):
    """A provider that can upload a file to its Files API (DeepSeek's ``POST /files``), for
    images over the inline limit; providers without one send images inline only."""

    async def upload_file(
        self, data: bytes, filename: str, mime: str, purpose: str = "user_data"
    ) -> str:
        """Upload ``data``; the new file's id."""
        ...
