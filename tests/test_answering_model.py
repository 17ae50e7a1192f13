"""The model the server says answered is the one usage is priced and reported by: DeepSeek
serves a retired alias with today's model (a live capture answers ``deepseek-v4-flash`` to a
request for a retired name), and the user is told once when the names differ."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reasonix.agent import Agent, AgentOptions
from reasonix.events import CollectingSink, NoticeEvent, UsageEvent
from reasonix.providers.models import Prices, price_usage
from reasonix.testing import FakeDeepSeekServer, Reply

ASKED = Prices(1.0, 10.0, 100.0)
ANSWERED = Prices(2.0, 20.0, 200.0)


def priced(model: str) -> tuple[Prices, Prices | None] | None:
    return (ANSWERED, None) if model == "deepseek-flash" else None


async def run_two_turns(
    make_provider: Callable[..., Any], srv: FakeDeepSeekServer, **options: Any
) -> CollectingSink:
    sink = CollectingSink()
    provider = make_provider(srv, model="deepseek-v4-flash")
    agent = Agent(provider, options=AgentOptions(prices=ASKED, **options), sink=sink)
    await agent.run("hi")
    await agent.run("again")
    return sink


async def test_cost_is_counted_at_the_answering_model_with_one_notice(
    make_provider: Callable[..., Any],
) -> None:
    script = [Reply.text("one"), Reply.text("two")]
    answers = {"deepseek-v4-flash": "deepseek-flash"}
    async with FakeDeepSeekServer(script, answer_model=answers) as srv:
        sink = await run_two_turns(make_provider, srv, prices_for=priced)
    usages = sink.of_type(UsageEvent)
    assert [u.model for u in usages] == ["deepseek-flash", "deepseek-flash"]
    for event in usages:
        assert event.cost == price_usage(event.usage, ANSWERED)
        assert event.cost != price_usage(event.usage, ASKED)
    notices = [n for n in sink.of_type(NoticeEvent) if n.code == "model_substituted"]
    assert len(notices) == 1  # once per session, not per request
    assert "deepseek-v4-flash" in notices[0].message and "deepseek-flash" in notices[0].message
    assert "deepseek-flash's prices" in notices[0].message


async def test_an_answering_model_without_prices_keeps_the_requested_prices(
    make_provider: Callable[..., Any],
) -> None:
    script = [Reply.text("one"), Reply.text("two")]
    async with FakeDeepSeekServer(script, answer_model="some-other-model") as srv:
        sink = await run_two_turns(make_provider, srv, prices_for=priced)
    usages = sink.of_type(UsageEvent)
    assert [u.model for u in usages] == ["some-other-model"] * 2
    assert all(u.cost == price_usage(u.usage, ASKED) for u in usages)
    (notice,) = [n for n in sink.of_type(NoticeEvent) if n.code == "model_substituted"]
    assert "no known prices" in notice.message


async def test_the_same_model_answering_says_nothing(make_provider: Callable[..., Any]) -> None:
    async with FakeDeepSeekServer([Reply.text("one"), Reply.text("two")]) as srv:
        sink = await run_two_turns(make_provider, srv, prices_for=priced)
    assert [u.model for u in sink.of_type(UsageEvent)] == ["deepseek-v4-flash"] * 2
    assert all(u.cost == price_usage(u.usage, ASKED) for u in sink.of_type(UsageEvent))
    assert not [n for n in sink.of_type(NoticeEvent) if n.code == "model_substituted"]


async def test_presets_price_the_answering_model_by_default(
    make_provider: Callable[..., Any],
) -> None:
    """Without ``prices_for`` (an agent built outside the app) the presets are used."""
    from reasonix.providers.models import get_model_info

    answers = {"deepseek-v4-flash": "deepseek-v4-pro"}
    async with FakeDeepSeekServer(
        [Reply.text("one"), Reply.text("two")], answer_model=answers
    ) as srv:
        sink = await run_two_turns(make_provider, srv)
    pro = get_model_info("deepseek-v4-pro").prices
    for event in sink.of_type(UsageEvent):
        assert event.model == "deepseek-v4-pro"
        # peak or off-peak, it is pro's price list (never the requested one's)
        assert event.cost in {price_usage(event.usage, pro), 2 * price_usage(event.usage, pro)}
