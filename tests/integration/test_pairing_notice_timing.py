"""Every stranger's pairing request reaches the owner within `pairing.notice_minutes`, and a
notice's count is the list it shows (bot.gateway.pairing_notices), on SQLite and Postgres,
with the app's own clock moved by hand: the workers' loop tells the requests that waited the
moment the window opens, never at its next round, and nothing else."""

from __future__ import annotations

from datetime import timedelta

from bot.config.channel_sections import SmsSettings
from bot.config.policies import AccessSettings, ChannelAccess
from bot.config.sections import PairingSettings
from tests.helpers import incoming, until
from tests.integration.test_strangers_cost import owner_app

OWNER = "+12125550100"
WINDOW = timedelta(minutes=10)


async def _app(app_factory, db_url):
    return await owner_app(app_factory, db_url, pairing=PairingSettings(notice_minutes=10),
                           sms=SmsSettings(stranger_replies_per_hour=20,
                                           allowed_countries=["US"]),
                           access=AccessSettings(
                               channels={"sms": ChannelAccess(policy="pairing")},
                               max_pending_pairings=5))


async def _said(sender) -> str:
    return f"the owner was told: {sender.texts(OWNER)}"


async def _asks(app, number: str) -> str:
    """A stranger writes; their pairing code."""
    await app.gateway.receive(incoming("hi", channel="sms", address=number))
    await app.gateway.wait_idle()
    [request] = [p for p in await app.access.list_pairings(app.clock.now(), pending_only=False)
                 if p.address == number]
    return request.code


async def test_a_request_made_while_the_owner_was_told_recently_is_told_when_the_window_opens(
        db_url, app_factory, fake_llm):
    app, sender = await _app(app_factory, db_url)
    await _asks(app, "+13125550001")
    assert len(sender.texts(OWNER)) == 1  # the first request: at once
    told_first = app.clock.now()

    app.clock.advance(minutes=2)
    code = await _asks(app, "+13125550002")
    asked_at = app.clock.now()
    app.clock.advance(minutes=7, seconds=59)
    await app.gateway.wait_idle()
    assert len(sender.texts(OWNER)) == 1  # the window is still closed

    app.clock.advance(seconds=1)  # ten minutes since the first notice: the loop wakes
    await until(lambda: len(sender.texts(OWNER)) == 2, "the second request's notice",
                seen=lambda: _said(sender))
    assert app.clock.now() - told_first == WINDOW and app.clock.now() - asked_at <= WINDOW
    notice = sender.texts(OWNER)[1]
    assert "+13125550002" in notice and code in notice and "people asked" not in notice
    assert fake_llm.calls == 0


async def test_the_count_is_the_list_when_some_were_decided_before_the_owner_was_told(
        db_url, app_factory, fake_llm):
    app, sender = await _app(app_factory, db_url)
    await _asks(app, "+13125550001")  # told at once: the window closes
    app.clock.advance(minutes=1)
    decided = await _asks(app, "+13125550002")
    app.clock.advance(minutes=1)
    second = await _asks(app, "+13125550003")
    app.clock.advance(minutes=1)
    third = await _asks(app, "+13125550004")
    assert await app.access.deny(decided, app.clock.now())  # the owner saw it in /pair list

    app.clock.advance(minutes=7)
    await until(lambda: len(sender.texts(OWNER)) == 2, "the gathered notice",
                seen=lambda: _said(sender))
    batch = sender.texts(OWNER)[1]
    assert batch.startswith("2 people asked to talk to me.")
    assert second in batch and third in batch and decided not in batch
    assert len([line for line in batch.splitlines() if line.startswith((second, third))]) == 2


async def test_a_request_decided_before_it_was_told_does_not_take_the_window(
        db_url, app_factory, fake_llm):
    app, sender = await _app(app_factory, db_url)
    await _asks(app, "+13125550001")
    app.clock.advance(minutes=1)
    decided = await _asks(app, "+13125550002")
    assert await app.access.deny(decided, app.clock.now())
    app.clock.advance(minutes=9)  # the window opens: nothing is waiting, nothing said
    notices = app.gateway.deps.pairing_notices
    assert notices is not None
    assert not await notices.tell()
    assert len(sender.texts(OWNER)) == 1

    app.clock.advance(minutes=1)
    code = await _asks(app, "+13125550003")  # the window was not used up: told at once
    assert len(sender.texts(OWNER)) == 2 and code in sender.texts(OWNER)[1]
