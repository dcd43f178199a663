"""What strangers can make Valet send, on SQLite and Postgres: one reply per sender a window,
an hourly cap for all of them (the owner told once), nothing to a country not allowed, and
pairing notices to the owner gathered (at most one per pairing.notice_minutes)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from bot.config.channel_sections import SmsSettings
from bot.config.policies import AccessSettings, ChannelAccess
from bot.config.sections import PairingSettings
from bot.db import Database
from bot.people.strangers import StrangerLimits, StrangerReplies, Verdict
from bot.text.phones import in_countries
from tests.helpers import RecordingSender, incoming, until

NOW = datetime(2026, 1, 5, 9, tzinfo=UTC)
LIMITS = {"sms": StrangerLimits(per_sender=timedelta(hours=24), per_hour=3,
                                reachable=in_countries(["US"]))}


async def test_one_reply_per_sender_a_day(db: Database):
    strangers = StrangerReplies(db, LIMITS)
    verdicts = [(await strangers.take("sms", "+13125550001", NOW + timedelta(hours=h))).verdict
                for h in (0, 1, 23, 24)]
    assert verdicts == [Verdict.REPLY, Verdict.QUIET, Verdict.QUIET, Verdict.REPLY]
    other = await strangers.take("telegram", "+13125550001", NOW)  # no limits there
    assert other.verdict is Verdict.REPLY


async def test_the_hourly_cap_holds_under_concurrency_and_gives_the_sender_s_reply_back(
        db: Database):
    strangers = StrangerReplies(db, LIMITS)
    numbers = [f"+1312555{i:04d}" for i in range(20)]
    decisions = await asyncio.gather(*(strangers.take("sms", n, NOW) for n in numbers))
    assert sum(d.verdict is Verdict.REPLY for d in decisions) == 3
    capped = [d for d in decisions if d.verdict is Verdict.CAPPED]
    assert len(capped) == 17 and sum(d.first_refused for d in capped) == 1  # told once
    assert {d.window_ends for d in capped} == {NOW + timedelta(hours=1)}
    # A capped sender was not answered: its own allowance is back once the hour is over.
    refused = next(n for n, d in zip(numbers, decisions, strict=True)
                   if d.verdict is Verdict.CAPPED)
    later = await strangers.take("sms", refused, NOW + timedelta(minutes=61))
    assert later.verdict is Verdict.REPLY


async def test_a_country_not_allowed_gets_nothing(db: Database):
    strangers = StrangerReplies(db, LIMITS)
    for number in ("+447700900123", "+79161234567", "+88216123456", "SHORTCODE"):
        assert (await strangers.take("sms", number, NOW)).verdict is Verdict.UNREACHABLE


async def owner_app(app_factory, db_url, **overrides):
    settings = {"access": AccessSettings(channels={"sms": ChannelAccess(policy="pairing")}),
                "sms": SmsSettings(stranger_replies_per_hour=3, allowed_countries=["US"]),
                **overrides}
    app = await app_factory(database_url=db_url, **settings)
    sender = RecordingSender("sms")
    app.add_channel(sender)
    await app.identities.link("sms", "+12125550100", "owner", at=app.clock.now())
    await app.start()
    return app, sender


async def test_strangers_beyond_the_cap_are_silent_and_make_no_request(db_url, app_factory,
                                                                        fake_llm):
    app, sender = await owner_app(app_factory, db_url)
    numbers = [f"+1312555{i:04d}" for i in range(8)]
    for number in numbers:
        await app.gateway.receive(incoming("hi", channel="sms", address=number))
    await app.gateway.receive(incoming("/link 4K7M2Q", channel="sms", address="+13125559999"))
    await app.gateway.receive(incoming("hi", channel="sms", address="+447700900123"))
    await app.gateway.wait_idle()
    answered = [n for n in numbers if sender.texts(n)]
    assert len(answered) == 3 and all(len(sender.texts(n)) == 1 for n in answered)
    assert sender.texts("+13125559999") == [] and sender.texts("+447700900123") == []
    requests = await app.access.list_pairings(app.clock.now(), pending_only=False)
    assert sorted(r.address for r in requests) == sorted(answered)
    notices = sender.texts("+12125550100")
    assert len(notices) == 2  # the first request at once, and the cap's one digest
    assert "wants to talk to me" in notices[0]
    assert "won't answer more there for 60 minutes" in notices[1]
    assert fake_llm.calls == 0


async def test_pairing_notices_are_gathered_with_their_codes(db_url, app_factory, fake_llm):
    app, sender = await owner_app(app_factory, db_url, pairing=PairingSettings(notice_minutes=10),
                                  access=AccessSettings(
                                      channels={"sms": ChannelAccess(policy="pairing")},
                                      max_pending_pairings=5))
    await app.gateway.receive(incoming("hi", channel="sms", address="+13125550001"))
    await app.gateway.wait_idle()
    [first] = sender.texts("+12125550100")
    assert "+13125550001" in first
    for number in ("+13125550002", "+13125550003"):
        app.clock.advance(minutes=2)
        await app.gateway.receive(incoming("hi", channel="sms", address=number))
    await app.gateway.wait_idle()
    assert len(sender.texts("+12125550100")) == 1  # told recently: they wait
    notices = app.gateway.deps.pairing_notices
    assert notices is not None and not await notices.tell()
    app.clock.advance(minutes=6)  # ten minutes since the first notice
    # Told once: by this call or by the workers' loop, which wakes as the window opens.
    await notices.tell()
    await until(lambda: len(sender.texts("+12125550100")) == 2, "the gathered notice")
    await app.gateway.wait_idle()
    assert len(sender.texts("+12125550100")) == 2
    batch = sender.texts("+12125550100")[-1]
    codes = [p.code for p in await app.access.list_pairings(app.clock.now())][1:]
    assert batch.startswith("2 people asked to talk to me.")
    assert all(code in batch for code in codes) and "/pair list" in batch
    assert "+13125550002" in batch and "+13125550003" in batch
    assert not await notices.tell()  # nothing new: nothing said
