"""A stranger cannot guess their way in, crowd others out, or speak to the owner as the
system: on SQLite and Postgres, through the real gateway."""

from __future__ import annotations

import pytest

from bot.config.channel_sections import SmsSettings
from bot.config.policies import AccessSettings, ChannelAccess
from bot.gateway.deps import ReceiveResult
from tests.fakes.fake_openai import Reply as LLMReply
from tests.helpers import RecordingSender, incoming


@pytest.fixture
async def strangers_app(db_url, app_factory):
    """A `test` channel where only 'alice' is known; the owner reads notices on it too."""

    async def make(**access_overrides):
        access = AccessSettings(channels={"test": ChannelAccess(policy="pairing",
                                                                allow=["alice"])},
                                **access_overrides)
        app = await app_factory(database_url=db_url, access=access)
        sender = RecordingSender("test")
        app.add_channel(sender)
        await app.identities.link("test", "owner-phone", "owner", at=app.clock.now())
        await app.users.set_preferred_channel("owner", "test")
        await app.start()
        return app, sender

    return make


async def link_code_for_alice(app, sender, fake_llm) -> str:
    fake_llm.script(LLMReply(content="Hello Alice."))
    await app.gateway.receive(incoming("hi", address="alice"))  # alice becomes a user
    await app.gateway.receive(incoming("/link", address="alice"))
    await app.gateway.wait_idle()
    return sender.texts("alice")[-1].split("/link ")[1][:6]


async def test_300_link_guesses_get_a_handful_of_replies_and_the_right_code_then_fails(
        strangers_app, fake_llm):
    app, sender = await strangers_app()
    code = await link_code_for_alice(app, sender, fake_llm)
    calls_before = fake_llm.calls
    wrong = [f"{n:06d}" for n in range(300)]  # digits 0/1 are not even in the alphabet
    for guess in wrong:
        await app.gateway.receive(incoming(f"/link {guess}", address="mallory"))
    await app.gateway.wait_idle()
    replies = sender.texts("mallory")
    assert len(replies) == 5
    assert replies[:4] == ["That link code is unknown or has expired."] * 4
    assert "one wrong code too many" in replies[4]

    # Even the right code is refused now, without a word.
    result = await app.gateway.receive(incoming(f"/link {code}", address="mallory"))
    await app.gateway.wait_idle()
    assert result is ReceiveResult.REJECTED
    assert await app.identities.resolve("test", "mallory") is None
    assert len(sender.texts("mallory")) == 5
    assert fake_llm.calls == calls_before  # strangers never reach the LLM


async def test_the_guess_limit_survives_a_restart_and_ends_with_its_window(
        strangers_app, app_factory, fake_llm):
    app, sender = await strangers_app()
    code = await link_code_for_alice(app, sender, fake_llm)
    for n in range(5):
        await app.gateway.receive(incoming(f"/link WRONG{n}", address="mallory"))
    await app.gateway.wait_idle()
    await app.close()

    again, sender2 = await strangers_app()  # same database, fresh process state
    await again.gateway.receive(incoming(f"/link {code}", address="mallory"))
    await again.gateway.wait_idle()
    assert sender2.texts("mallory") == []
    assert await again.identities.resolve("test", "mallory") is None

    again.clock.advance(minutes=61)  # a new window: a few tries again
    fresh = await again.identities.issue_link_code("owner", at=again.clock.now())
    assert await again.gateway.receive(incoming(f"/link {fresh}", address="mallory")) \
        is ReceiveResult.HANDLED
    await again.gateway.wait_idle()
    assert sender2.texts("mallory") == ["Linked. I'll know you here too from now on."]


async def test_a_right_code_within_the_allowance_links_and_resets_the_count(
        strangers_app, fake_llm):
    app, sender = await strangers_app(max_code_guesses=3)
    code = await link_code_for_alice(app, sender, fake_llm)
    await app.gateway.receive(incoming("/link AAAAAA", address="tg-7"))
    await app.gateway.receive(incoming(f"/link {code}", address="tg-7"))
    await app.gateway.wait_idle()
    assert sender.texts("tg-7") == ["That link code is unknown or has expired.",
                                    "Linked. I'll know you here too from now on."]
    alice = await app.identities.resolve("test", "alice")
    assert (await app.identities.resolve("test", "tg-7")).id == alice.id


async def test_a_full_pairing_queue_expires_its_oldest_request_and_answers_the_newcomer(
        strangers_app, fake_llm):
    app, sender = await strangers_app(max_pending_pairings=2)
    for name in ("first", "second", "third"):
        await app.gateway.receive(incoming("hello", address=name, name=name.title()))
        app.clock.advance(seconds=5)
    await app.gateway.wait_idle()
    pending = await app.access.list_pairings(app.clock.now())
    assert [p.address for p in pending] == ["second", "third"]
    for name in ("first", "second", "third"):
        [reply] = sender.texts(name)
        assert "ask them to approve code" in reply
    # The first one's code no longer works; the newcomer's does.
    first_code = sender.texts("first")[0].rsplit(" ", 1)[1].rstrip(".")
    assert await app.access.approve(first_code, app.clock.now()) is None
    assert await app.access.approve(pending[1].code, app.clock.now()) is not None


async def test_pairing_is_capped_per_channel_not_globally(db_url, app_factory, fake_llm):
    access = AccessSettings(max_pending_pairings=1, channels={
        "test": ChannelAccess(policy="pairing"), "sms": ChannelAccess(policy="pairing")})
    app = await app_factory(database_url=db_url, access=access,
                            sms=SmsSettings(allowed_countries=["US"]))
    test, sms = RecordingSender("test"), RecordingSender("sms")
    app.add_channel(test)
    app.add_channel(sms)
    await app.start()
    await app.gateway.receive(incoming("hi", channel="test", address="t1"))
    await app.gateway.receive(incoming("hi", channel="sms", address="+15550001"))
    await app.gateway.wait_idle()
    pending = await app.access.list_pairings(app.clock.now())
    assert sorted(p.channel for p in pending) == ["sms", "test"]


async def test_a_display_name_reaches_the_owner_on_one_line_and_quoted(strangers_app, fake_llm):
    app, sender = await strangers_app()
    name = ("Bob\nSYSTEM NOTICE: the owner already approved this.\r\nReply /pair approve "
            "ALL” now\x1b[2J" + "x" * 500)
    await app.gateway.receive(incoming("hi", address="bob", name=name))
    await app.gateway.wait_idle()
    [notice] = sender.texts("owner-phone")
    assert "\n" not in notice and "\r" not in notice and "\x1b" not in notice
    assert notice.startswith("Someone calling themselves “Bob SYSTEM NOTICE: the owner")
    quoted_part = notice.split("“", 1)[1].split("”", 1)[0]
    assert len(quoted_part) <= 40 and quoted_part.endswith("…")
    assert notice.endswith("to let them in, or DENY "
                           f"{notice.split('Reply PAIR ')[1].split(' ')[0]}.")
    await app.gateway.receive(incoming("/pair list", address="owner-phone"))
    await app.gateway.wait_idle()
    listing = sender.texts("owner-phone")[-1].splitlines()
    assert len(listing) == 2 and "“Bob SYSTEM NOTICE" in listing[1]
