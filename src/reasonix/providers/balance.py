"""DeepSeek's ``GET {base}/user/balance``: what the account has left, for ``reasonix doctor``,
``/cost`` and the message after a 402 (insufficient balance).

The answer is ``{"is_available": bool, "balance_infos": [{"currency", "total_balance",
"granted_balance", "topped_up_balance"}]}`` with the amounts as strings; granted balance is
spent first. Endpoints that are not DeepSeek usually have no such path: every failure comes
back as a short reason, never an exception, because the balance is only ever extra information.
httpx is imported only when a balance is fetched.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx

__all__ = ["Balance", "BalanceInfo", "balance_url", "fetch_balance", "fetch_balance_async"]

_TIMEOUT = 5.0


@dataclass(frozen=True, slots=True)
class BalanceInfo:
    """One currency's amounts, as the server wrote them (decimal strings)."""

    currency: str
    total: str
    granted: str
    topped_up: str


@dataclass(frozen=True, slots=True)
class Balance:
    """The account's balance; ``available`` is False when it cannot pay for requests."""

    available: bool
    infos: tuple[BalanceInfo, ...]

    def describe(self) -> str:
        """``110.00 USD (granted 10.00, topped up 100.00)``, one entry per currency."""
        if not self.infos:
            return "no balance reported" if self.available else "no balance left"
        parts = [
            f"{i.total} {i.currency} (granted {i.granted}, topped up {i.topped_up})"
            for i in self.infos
        ]
        text = "; ".join(parts)
        return text if self.available else text + ": not enough to make requests"

    @classmethod
    def from_api(cls, data: Any) -> Balance | None:
        """Read the JSON answer; None when it is not shaped like one."""
        if not isinstance(data, Mapping) or "balance_infos" not in data:
            return None
        infos = []
        for item in data.get("balance_infos") or ():
            if isinstance(item, Mapping):
                infos.append(
                    BalanceInfo(
                        str(item.get("currency", "?")),
                        str(item.get("total_balance", "?")),
                        str(item.get("granted_balance", "?")),
                        str(item.get("topped_up_balance", "?")),
                    )
                )
        return cls(bool(data.get("is_available", True)), tuple(infos))


def balance_url(base_url: str) -> str:
    """``{base}/user/balance``; a ``/v1`` base serves it at the root, as DeepSeek does."""
    base = base_url.rstrip("/")
    base = base.removesuffix("/v1")
    return base + "/user/balance"


def _headers(api_key: str | None, headers: Mapping[str, str] | None) -> dict[str, str]:
    sent = dict(headers or {})
    if api_key:
        sent["Authorization"] = f"Bearer {api_key}"
    return sent


def _read(status: int, payload: Any) -> Balance | str:
    if status == 401:
        return "the API key was refused (401)"
    if status != 200:
        return f"no balance endpoint (HTTP {status})"
    balance = Balance.from_api(payload)
    return balance if balance is not None else "the balance answer was not understood"


def fetch_balance(
    base_url: str, api_key: str | None, headers: Mapping[str, str] | None = None
) -> Balance | str:
    """The balance, or a short reason it could not be had."""
    import httpx

    try:
        response = httpx.get(
            balance_url(base_url), headers=_headers(api_key, headers), timeout=_TIMEOUT
        )
        payload = response.json() if response.status_code == 200 else None
    except (httpx.HTTPError, ValueError) as exc:
        return f"could not read the balance ({type(exc).__name__})"
    return _read(response.status_code, payload)


async def fetch_balance_async(
    base_url: str,
    api_key: str | None,
    headers: Mapping[str, str] | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
) -> Balance | str:
    """:func:`fetch_balance` without blocking the event loop; ``transport`` is the one the
    caller's requests go through (a provider's own), so the balance is asked of the same
    server the same way."""
    import httpx

    try:
        async with httpx.AsyncClient(timeout=_TIMEOUT, transport=transport) as client:
            response = await client.get(balance_url(base_url), headers=_headers(api_key, headers))
        payload = response.json() if response.status_code == 200 else None
    except (httpx.HTTPError, ValueError) as exc:
        return f"could not read the balance ({type(exc).__name__})"
    return _read(response.status_code, payload)
