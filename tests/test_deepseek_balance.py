"""``GET /user/balance``: in the message after a 402, in ``/cost`` (the façade's ``balance``
and the CNY cost table), and in ``reasonix doctor`` (see test_deepseek_models.py)."""

from __future__ import annotations

from pathlib import Path

from reasonix.app.runtime import Runtime
from reasonix.config import load_config
from reasonix.errors import InsufficientBalanceError
from reasonix.messages import ModelRequest, UserMessage
from reasonix.providers.balance import Balance, fetch_balance
from reasonix.providers.openai_compat import OpenAICompatProvider
from reasonix.store import SessionStore
from reasonix.testing import FakeDeepSeekServer, Fault, Reply
from tests.support.project import KEY_ENV, project_toml

EMPTY = {
    "is_available": False,
    "balance_infos": [
        {
            "currency": "CNY",
            "total_balance": "0.00",
            "granted_balance": "0.00",
            "topped_up_balance": "0.00",
        }
    ],
}


def test_fetch_balance_reads_the_documented_answer() -> None:
    with FakeDeepSeekServer(api_key="sk-good") as srv:
        balance = fetch_balance(srv.base_url + "/v1", "sk-good")
        refused = fetch_balance(srv.base_url, "sk-bad")
    assert isinstance(balance, Balance) and balance.available
    assert balance.describe() == "110.00 USD (granted 10.00, topped up 100.00)"
    assert isinstance(refused, str) and "401" in refused
    with FakeDeepSeekServer(balance=None) as srv:
        missing = fetch_balance(srv.base_url, "sk")
    assert isinstance(missing, str) and "404" in missing


async def test_a_402_says_what_the_balance_is() -> None:
    async with FakeDeepSeekServer([Reply.failing(Fault(status=402))], balance=EMPTY) as srv:
        provider = OpenAICompatProvider(
            base_url=srv.base_url, model="deepseek-flash", api_key="sk-test", max_retries=0
        )
        try:
            request = ModelRequest(messages=(UserMessage("hi"),))
            error: Exception | None = None
            try:
                async for _ in provider.stream(request):
                    pass
            except InsufficientBalanceError as exc:
                error = exc
        finally:
            await provider.aclose()
    assert error is not None
    text = str(error)
    assert "top up" in text
    assert "Balance now: 0.00 CNY (granted 0.00, topped up 0.00): not enough" in text


async def test_cost_shows_the_balance_and_cny_costs(tmp_path: Path) -> None:
    async with FakeDeepSeekServer() as ex, FakeDeepSeekServer() as pl:
        (tmp_path / "reasonix.toml").write_text(project_toml(ex, pl, '\n[ui]\ncurrency = "CNY"\n'))
        config = load_config(
            tmp_path, environ={KEY_ENV: "sk-test"}, user_config=tmp_path / "none.toml"
        )
        store = SessionStore(tmp_path / "data" / "sessions.db")
        rt = await Runtime.from_config(config, tmp_path, store=store, environ={KEY_ENV: "sk-test"})
        try:
            ex.push(Reply.text("hello"))
            await rt.run_turn("hi")
            table = rt.usage.cost_table()
            balance = await rt.usage.balance()
        finally:
            await rt.aclose()
            store.close()
    assert "cost ¥" in table
    executor_row = next(line for line in table.splitlines() if line.startswith("executor"))
    assert float(executor_row.split()[-1]) > 0
    # one line per endpoint: the two fake servers
    assert balance.splitlines() == ["Balance: 110.00 USD (granted 10.00, topped up 100.00)"] * 2
