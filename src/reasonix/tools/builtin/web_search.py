"""``web_search``: DeepSeek's Search API (``POST {base}/v1/tools/search``), results for a model.

The endpoint and the key are the executor's provider's (``[web] search = "deepseek"``; ``"off"``
removes the tool). The request is the documented one, ``{"query", "count"}``; the answer's
``results`` give each result's title, URL, date and summary, each bounded, so the model can
pick one and read it with ``web_fetch``. Facts (shared/reference/deepseek-api.md, "Search and
Fetch APIs"): a query of 1-128 characters, ``count`` 1-50; $0.75 (¥5) per 1,000 successful
requests, while searches with empty results and failed ones are free (third-party probes,
unconfirmed). The query is redacted like any tool input before it leaves the machine.

The price of each billed search rides on the tool result (:attr:`ToolResult.charge`); the agent
counts it on the calling role.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from reasonix.tools.registry import Charge, Tool, ToolContext, ToolResult

__all__ = [
    "SEARCH_PRICE_CNY",
    "SEARCH_PRICE_USD",
    "SearchOptions",
    "search_endpoint",
    "search_tool",
]

#: DeepSeek's list price of one successful search (per 1,000: $0.75, ¥5).
SEARCH_PRICE_USD = 0.75 / 1000
SEARCH_PRICE_CNY = 5.0 / 1000
MAX_QUERY = 128
MAX_COUNT = 20
DEFAULT_COUNT = 5
SUMMARY_CHARS = 800
TITLE_CHARS = 200
URL_CHARS = 500


@dataclass(frozen=True, slots=True)
class SearchOptions:
    endpoint: str
    #: the variable the key is read from when the search runs (the provider's api_key_env)
    api_key_env: str | None = None
    timeout: float = 30.0
    price_usd: float = SEARCH_PRICE_USD
    price_cny: float = SEARCH_PRICE_CNY


def search_endpoint(base_url: str) -> str:
    """``{base}/v1/tools/search`` for a provider base URL given with or without ``/v1``."""
    base = base_url.rstrip("/").removesuffix("/v1")
    return f"{base}/v1/tools/search"


def _cut(value: Any, limit: int) -> str:
    text = " ".join(str(value or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render_results(query: str, results: list[Any]) -> str:
    lines = [f"Search results for {query!r} ({len(results)}):"]
    for i, r in enumerate(results, 1):
        if not isinstance(r, dict):
            continue
        lines.append(f"{i}. {_cut(r.get('title'), TITLE_CHARS) or '(no title)'}")
        lines.append(f"   URL: {_cut(r.get('url'), URL_CHARS)}")
        if r.get("date"):
            lines.append(f"   Date: {_cut(r.get('date'), 40)}")
        summary = r.get("summary") or r.get("snippet")
        if summary:
            lines.append(f"   {_cut(summary, SUMMARY_CHARS)}")
    lines.append("Read a result in full with web_fetch (through more_tools) and its URL.")
    return "\n".join(lines)


class WebSearchTool:
    def __init__(self, options: SearchOptions) -> None:
        self.options = options

    async def web_search(
        self,
        ctx: ToolContext,
        query: Annotated[str, f"1-{MAX_QUERY} characters; site:, -site:, quotes work"],
        count: Annotated[int, f"results, 1-{MAX_COUNT}"] = DEFAULT_COUNT,
    ) -> ToolResult:
        """Search the web (DeepSeek's Search API): titles, URLs, dates and summaries. Paid per
        search: search once well rather than many times."""
        import httpx

        from reasonix.redaction import redact

        query = redact(query).strip()
        if not query or len(query) > MAX_QUERY:
            return ToolResult.error(f"query must be 1 to {MAX_QUERY} characters.")
        count = max(1, min(count, MAX_COUNT))
        headers = {"Content-Type": "application/json"}
        import os

        key = os.environ.get(self.options.api_key_env) if self.options.api_key_env else None
        if key:
            headers["Authorization"] = f"Bearer {key}"
        failed = Charge("web_search", 1, 0, 0.0, 0.0)
        try:
            async with httpx.AsyncClient(timeout=self.options.timeout) as client:
                response = await client.post(
                    self.options.endpoint, json={"query": query, "count": count}, headers=headers
                )
        except httpx.HTTPError as exc:
            return ToolResult(
                f"web_search failed: {type(exc).__name__}: {exc}", is_error=True, charge=failed
            )
        if response.status_code != 200:
            try:
                message = response.json()["error"]["message"]
            except (ValueError, KeyError, TypeError):
                message = response.text[:200]
            hint = {401: " (check the API key)", 402: " (top up the DeepSeek balance)"}.get(
                response.status_code, ""
            )
            return ToolResult(
                f"web_search failed: HTTP {response.status_code}: {message}{hint}",
                is_error=True,
                charge=failed,
            )
        try:
            results = response.json().get("results") or []
        except (ValueError, AttributeError):
            return ToolResult("web_search got an answer that is not JSON.", True, charge=failed)
        if not isinstance(results, list) or not results:
            return ToolResult(f"No results for {query!r} (not billed).", charge=failed)
        o = self.options
        return ToolResult(
            render_results(query, results[:count]),
            charge=Charge("web_search", 1, 1, o.price_usd, o.price_cny),
        )


def search_tool(options: SearchOptions) -> Tool:
    """``web_search`` as a registry tool (category ``web``, asks in ``ask`` mode, rules by
    ``query``: ``web_search(*)``)."""
    from reasonix.tools.builtin.files import builtin_tool

    searcher = WebSearchTool(options)
    return builtin_tool(
        searcher.web_search,
        name="web_search",
        category="web",
        kind="fetch",
        aliases=("WebSearch",),
        subjects=("query",),
        timeout=options.timeout + 15,
    )
