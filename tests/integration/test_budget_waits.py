"""A daily allowance per person, for the last 24 hours: each LLM call checked before it goes at
its worst cost (its prompt's tokens and llm.max_output_tokens: bot.meter.llm) and priced as it
is made (fallback models and the shortening pass included, cached input billed apart); at
the allowance the person's messages wait (told once, the owner once), commands still answer,
and the end of the 24 hours or a raise lets them through in order; /usage, `valet budget
list` and the console's Usage page show the same figures."""

from __future__ import annotations

import html
from argparse import Namespace

import pytest

from bot.cli.budget import run_budget
from bot.config.channel_sections import ConsoleSettings
from bot.config.llm_sections import FallbackModelSettings, ModelPrice
from bot.config.policies import AccessSettings, ChannelAccess
from bot.config.sections import BudgetSettings
from bot.llm.openai_client import OpenAILLM
from bot.llm.port import TokenUsage
from tests.fakes.fake_openai import Fail, Reply
from tests.helpers import RecordingSender, incoming
from tests.integration.console_harness import console_client, sign_in
from tests.integration.test_console_pages import said

# 100 + 100 tokens at $1 and $1,500 a million: $0.1501 a call; its worst (a few thousand
# prompt tokens and llm.max_output_tokens, 100) a little over $0.15.
PRICES = {"fake-model": ModelPrice(input=1, output=1500),
          "backup-model": ModelPrice(input=2, output=3000)}


async def priced_app(app_factory, app_settings, **overrides):
    llm = overrides.pop("llm", None) or app_settings().llm
    llm.prices = PRICES
    llm.max_output_tokens = 100
    access = AccessSettings(channels={"test": ChannelAccess(policy="allowlist",
                                                            allow=["alice"])})
    settings = {"llm": llm, "access": access, "budget": BudgetSettings(daily_usd=0.50),
                **overrides}
    app = await app_factory(**settings)
    sender = RecordingSender("test")
    app.add_channel(sender)
    await app.identities.link("test", "owner-phone", "owner", at=app.clock.now())
    await app.users.set_preferred_channel("owner", "test")
    await app.start()
    return app, sender


@pytest.fixture
async def alice_app(app_factory, app_settings):
    return await priced_app(app_factory, app_settings)


async def say(app, text: str) -> None:
    await app.gateway.receive(incoming(text, address="alice"))
    await app.gateway.wait_idle()


async def test_at_the_allowance_messages_wait_and_go_on_after_24_hours(alice_app, fake_llm):
    app, sender = alice_app
    fake_llm.script(*(Reply(content=f"Answer {i}.", usage=(100, 100)) for i in range(1, 6)))
    # $0.15, $0.30, $0.45; then a call that may cost $0.15 would pass $0.50: not made
    for text in ("one", "two", "three"):
        await say(app, text)
    await say(app, "four")
    await say(app, "five")
    await say(app, "/usage")  # a command calls no model: answered while messages wait
    replies = sender.texts("alice")
    assert replies[:3] == ["Answer 1.", "Answer 2.", "Answer 3."]
    assert replies[3] == app.persona.lines.budget_reached  # once, not once per message
    assert replies[4:] == ["Last 24 hours: $0.45 of your $0.50 allowance. This month: $0.45."]
    [owner] = sender.texts("owner-phone")
    assert owner.startswith("alice reached today's allowance ($0.45 of $0.50)")
    assert "valet budget raise test:alice" in owner
    assert fake_llm.calls == 3
    assert await app.release_held() == []  # still within the 24 hours: nothing goes
    app.clock.advance(hours=15)  # past midnight where alice lives (UTC): still nothing
    assert await app.release_held() == []
    app.clock.advance(hours=9, minutes=1)  # the 24 hours of those calls are over
    alice_id = (await app.identities.resolve("test", "alice")).id
    assert await app.release_held() == [alice_id]
    await app.gateway.wait_idle()
    assert sender.texts("alice")[-2:] == ["Answer 4.", "Answer 5."]  # in their order
    month = await app.budget.spending.month(alice_id, "2026-01-06")
    assert month.total == 5 * 150_100  # five calls (the test channel costs nothing)


async def test_a_raise_from_the_console_lets_the_waiting_messages_through(
        app_factory, fake_llm, app_settings):
    app, sender = await priced_app(app_factory, app_settings,
                                   console=ConsoleSettings(enabled=True),
                                   budget=BudgetSettings(daily_usd=0.20))
    fake_llm.script(*(Reply(content=f"Answer {i}.", usage=(600, 100)) for i in range(1, 4)))
    await say(app, "one")  # $0.1506: the next call, that may cost $0.15, does not fit $0.20
    await say(app, "two")
    alice = await app.identities.resolve("test", "alice")
    client = await console_client(app)
    try:
        csrf = await sign_in(client, app)
        page = html.unescape(await (await client.get("/console/usage")).text())
        assert "$0.15" in page and "(at the allowance)" in page
        response = await client.post(f"/console/usage/{alice.id}/raise", data={"csrf": csrf})
        assert said(response.url) == ("Raised today's allowance of alice by $0.20: their "
                                      "waiting messages go on.")
        await app.gateway.wait_idle()
        assert sender.texts("alice")[-1] == "Answer 2."
        page = html.unescape(await (await client.get("/console/usage")).text())
        assert "$0.40" in page  # the budget after the raise
        listed: list[str] = []
        assert await run_budget(app.settings, Namespace(action="list"), listed.append,
                                clock=app.clock) == 0
        [table] = listed
        row = next(line for line in table.splitlines() if line.startswith(alice.id))
        assert "$0.30" in row and "$0.40" in row  # the 24 hours (and this month), the budget
    finally:
        await client.close()


async def test_fallback_models_and_cached_input_are_priced(app_factory, fake_llm,
                                                          app_settings):
    llm = app_settings().llm
    llm.fallback_models = [FallbackModelSettings(model="backup-model")]
    llm.prices = PRICES
    app, sender = await priced_app(app_factory, app_settings, llm=llm)
    fake_llm.script(Fail(500), Fail(500), Fail(500), Fail(500),
                    Reply(content="From the backup.", usage=(100, 100)),
                    Reply(content="Cached.", usage=(1000, 0, 800)))
    await say(app, "one")
    assert sender.texts("alice")[-1] == "From the backup."
    alice = await app.identities.resolve("test", "alice")
    day = await app.budget.spending.day(alice.id, "2026-01-05")
    assert day.llm == 300_200  # 100 tokens at the backup's $2 a million, 100 at its $3,000
    await say(app, "two")
    day = await app.budget.spending.day(alice.id, "2026-01-05")
    assert day.llm == 300_200 + 1_000  # 1,000 input tokens at $1, 800 of them cached
    # ... at the input price, since fake-model has no cached price of its own


async def test_the_openai_client_reads_cached_tokens(fake_llm):
    client = OpenAILLM(base_url=fake_llm.base_url, api_key="k", model="m", timeout=5)
    try:
        fake_llm.script(Reply(content="hi", usage=(1000, 10, 600)))
        response = await client.complete([{"role": "user", "content": "hi"}], None)
        assert response.usage == TokenUsage(1000, 10, 600)
    finally:
        await client.close()
