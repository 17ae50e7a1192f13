"""DeepSeek's Files API as a client uses it: upload one image, get its ``file_id``.

``POST {base}/files`` with ``multipart/form-data``: a ``purpose`` field (``user_data`` for
images) **before** the ``file`` field, as DeepSeek requires; the answer is a file object whose
``id`` (``file-api-…``) a chat request names in a ``{"type": "file", "file_id": …}`` part
(shared/reference/deepseek-api.md, "Files API"). No expiry is set, so the file stays usable for
every later request of the session, and a resumed one. Uploads are retried like requests (429,
5xx, connection errors) with the provider's backoff; anything else is raised at once.
httpx is imported only when an upload runs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from reasonix.errors import ProviderError

if TYPE_CHECKING:
    import httpx

    from reasonix.providers.http_errors import HttpPhase
    from reasonix.providers.retry import RetryPolicy

__all__ = ["UPLOAD_TIMEOUT", "files_url", "upload_file"]

#: DeepSeek lets an image upload take up to 10 minutes.
UPLOAD_TIMEOUT = 600.0


def files_url(base_url: str) -> str:
    """``{base}/files``: the same base chat completions use, with or without ``/v1``."""
    return base_url.rstrip("/") + "/files"


async def upload_file(
    client: httpx.AsyncClient,
    url: str,
    headers: Mapping[str, str],
    *,
    data: bytes,
    filename: str,
    mime: str,
    purpose: str,
    policy: RetryPolicy,
    failure: Callable[[BaseException, HttpPhase], ProviderError],
    status_error: Callable[[httpx.Response], ProviderError],
) -> str:
    """Upload ``data`` and return the new file's id (see the module docstring)."""
    import httpx

    sent = {k: v for k, v in headers.items() if k.lower() not in ("content-type", "accept")}
    sent["Accept"] = "application/json"
    timeout = httpx.Timeout(UPLOAD_TIMEOUT, connect=30.0)
    attempt = 0
    while True:
        try:
            try:
                response = await client.post(
                    url,
                    data={"purpose": purpose},
                    files={"file": (filename, data, mime)},
                    headers=sent,
                    timeout=timeout,
                )
            except httpx.HTTPError as exc:
                raise failure(exc, "send") from exc
            if response.status_code >= 400:
                raise status_error(response)
            payload: Any = response.json()
        except ProviderError as error:
            attempt += 1
            if not error.retryable or attempt > policy.max_retries:
                raise
            await policy.sleep(policy.delay(attempt, error.retry_after))
            continue
        except ValueError as exc:
            raise ProviderError(f"The Files API answer from {url} was not JSON: {exc}") from None
        file_id = payload.get("id") if isinstance(payload, Mapping) else None
        if not isinstance(file_id, str) or not file_id:
            raise ProviderError(f"The Files API answer from {url} carried no file id")
        return file_id
