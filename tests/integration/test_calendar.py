"""The calendar against a real CalDAV server (Radicale) and an ICS feed served by the test:
recurring events across a daylight-saving change, changes only with the person's approval,
conflicts pointed out."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest
from aiohttp import web

from bot.contracts.clock import FakeClock
from bot.contracts.envelopes import Inbound
from bot.credentials import new_key
from tests.fakes.fake_openai import Reply, ToolCall
from tests.fakes.radicale_server import PASSWORD, USER, event_titles, make_calendar, radicale
from tests.helpers import app_with_connected_owner, requests_of, unquoted

# Europe/Paris moves to summer time on Sunday 29 March 2026: a weekly 09:30 stand-up that
# began before it is still at 09:30 local (07:30 UTC, not 08:30) on Monday the 30th.
STANDUP = """BEGIN:VCALENDAR
VERSION:2.0
PRODID:-//test//EN
BEGIN:VTIMEZONE
TZID:Europe/Paris
BEGIN:STANDARD
DTSTART:19701025T030000
RRULE:FREQ=YEARLY;BYMONTH=10;BYDAY=-1SU
TZOFFSETFROM:+0200
TZOFFSETTO:+0100
END:STANDARD
BEGIN:DAYLIGHT
DTSTART:19700329T020000
RRULE:FREQ=YEARLY;BYMONTH=3;BYDAY=-1SU
TZOFFSETFROM:+0100
TZOFFSETTO:+0200
END:DAYLIGHT
END:VTIMEZONE
BEGIN:VEVENT
UID:standup-1
DTSTAMP:20260301T000000Z
DTSTART;TZID=Europe/Paris:20260316T093000
DTEND;TZID=Europe/Paris:20260316T094500
RRULE:FREQ=WEEKLY;BYDAY=MO
SUMMARY:Standup
END:VEVENT
END:VCALENDAR
"""
DENTIST = """BEGIN:VCALENDAR
VERSION:2.0
PRODID:-//test//EN
BEGIN:VEVENT
UID:dentist-1
DTSTAMP:20260301T000000Z
DTSTART:20260330T120000Z
DTEND:20260330T123000Z
SUMMARY:Dentist
LOCATION:Rue Mercière
END:VEVENT
END:VCALENDAR
"""
MONDAY_MORNING = datetime(2026, 3, 30, 5, 0, tzinfo=UTC)  # 07:00 in Paris


@pytest.fixture
def secret_key(monkeypatch):
    monkeypatch.setenv("VALET_SECRET_KEY", new_key())


@pytest.fixture
async def caldav_url(tmp_path):
    async with radicale(tmp_path) as url:
        await asyncio.to_thread(make_calendar, url, "Personal", [STANDUP, DENTIST])
        yield url


@pytest.fixture
async def ics_url():
    app = web.Application()

    async def feed(request: web.Request) -> web.Response:
        return web.Response(text=STANDUP, content_type="text/calendar")

    app.router.add_get("/private/basic.ics", feed)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    yield f"http://127.0.0.1:{runner.addresses[0][1]}/private/basic.ics"
    await runner.cleanup()


async def connected_app(app_factory, secret: dict[str, str]):
    return await app_with_connected_owner(app_factory, "calendar", secret,
                                          clock=FakeClock(MONDAY_MORNING),
                                          timezone="Europe/Paris")


def caldav_secret(url: str) -> dict[str, str]:
    return {"kind": "caldav", "url": url, "username": USER, "password": PASSWORD}


def say(app, user: str, text: str):
    return app.orchestrator.handle_message(Inbound(
        user_id=user, channel="console", text=text, received_at=MONDAY_MORNING))


def last_result(fake_llm) -> str:
    return [m["content"] for m in fake_llm.requests[-1]["messages"] if m["role"] == "tool"][-1]


def events_listed(fake_llm) -> str:
    """The last listing of events the model read: quoted as data (organisers wrote it)."""
    return unquoted(last_result(fake_llm))


async def test_today_lists_the_recurring_standup_at_its_local_time_after_the_clock_change(
        app_factory, fake_llm, secret_key, caldav_url):
    app, me = await connected_app(app_factory, caldav_secret(caldav_url))
    fake_llm.script(Reply(tool_calls=[ToolCall("list_events", {"day": "today"})]),
                    Reply(content="Standup at 9:30, dentist at 14:00."))
    reply = await say(app, me, "what's on today?")
    assert reply.text == "Standup at 9:30, dentist at 14:00."
    assert events_listed(fake_llm).splitlines() == [
        "Mon 30 Mar 09:30-09:45 Standup [id standup-1]",
        "Mon 30 Mar 14:00-14:30 Dentist at Rue Mercière [id dentist-1]"]
    assert PASSWORD not in str(fake_llm.requests)  # the secret never reaches the model


async def test_the_next_meeting_is_the_standup(app_factory, fake_llm, secret_key, caldav_url):
    app, me = await connected_app(app_factory, caldav_secret(caldav_url))
    fake_llm.script(Reply(tool_calls=[ToolCall("next_event", {})]), Reply(content="9:30."))
    await say(app, me, "my next meeting?")
    assert events_listed(fake_llm) == "Mon 30 Mar 09:30-09:45 Standup [id standup-1]"


async def test_an_event_is_created_only_after_approval_and_shows_title_time_attendees(
        app_factory, fake_llm, secret_key, caldav_url):
    app, me = await connected_app(app_factory, caldav_secret(caldav_url))
    fake_llm.script(Reply(tool_calls=[ToolCall("create_event", {
        "title": "Lunch with Ana", "start": "2026-03-30T12:45", "end": "2026-03-30T13:45",
        "attendees": ["ana@example.com"]})]))
    reply = await say(app, me, "lunch with Ana at 12:45, invite her")
    [approval] = await requests_of(app, reply)
    assert approval.summary == "Add “Lunch with Ana” Mon 30 Mar 12:45-13:45, with ana@example.com"
    assert await asyncio.to_thread(event_titles, caldav_url) == ["Dentist", "Standup"]
    fake_llm.script(Reply(content="Booked."))
    reply = await say(app, me, "yes")
    assert reply.text == "Booked."
    assert last_result(fake_llm) == "Added “Lunch with Ana” Mon 30 Mar 12:45-13:45."
    assert await asyncio.to_thread(event_titles, caldav_url) == [
        "Dentist", "Lunch with Ana", "Standup"]


async def test_a_conflicting_event_is_pointed_out(app_factory, fake_llm, secret_key,
                                                  caldav_url):
    app, me = await connected_app(app_factory, caldav_secret(caldav_url))
    fake_llm.script(Reply(tool_calls=[ToolCall("create_event", {
        "title": "Call with Bob", "start": "2026-03-30T14:15", "end": "2026-03-30T15:00"})]))
    await say(app, me, "call with Bob at 14:15")
    fake_llm.script(Reply(content="Added; note it overlaps the dentist."))
    await say(app, me, "yes")
    result = last_result(fake_llm)
    assert result.startswith("Added “Call with Bob” Mon 30 Mar 14:15-15:00.")
    said, clashes = result.split("\n", 1)
    assert said.endswith("overlaps:")
    assert unquoted(clashes).startswith("Mon 30 Mar 14:00-14:30 Dentist")


async def test_cancelling_waits_for_approval_then_deletes_it(app_factory, fake_llm, secret_key,
                                                             caldav_url):
    app, me = await connected_app(app_factory, caldav_secret(caldav_url))
    fake_llm.script(Reply(tool_calls=[ToolCall("cancel_event", {
        "event_id": "dentist-1", "title": "Dentist"})]))
    reply = await say(app, me, "cancel the dentist")
    [approval] = await requests_of(app, reply)
    assert approval.summary == "Cancel “Dentist”"
    fake_llm.script(Reply(content="Cancelled."))
    await say(app, me, "yes")
    assert await asyncio.to_thread(event_titles, caldav_url) == ["Standup"]


async def test_times_are_checked_in_the_persons_zone_before_anyone_is_asked(
        app_factory, fake_llm, secret_key, caldav_url):
    """Issue [truth] 2: the card shows the time that will be written, read in the person's
    zone; a time that cannot be read, or an event that does not exist, gets no card."""
    app, me = await connected_app(app_factory, caldav_secret(caldav_url))
    fake_llm.script(Reply(tool_calls=[ToolCall("create_event", {
        "title": "Lunch with Ana", "start": "tomorrow 13:00"})]))
    reply = await say(app, me, "lunch with Ana tomorrow at 1")
    [approval] = await requests_of(app, reply)
    assert approval.summary == "Add “Lunch with Ana” Tue 31 Mar 13:00-14:00"
    assert (approval.arguments["start"], approval.arguments["end"]) == (
        "2026-03-31T13:00", "2026-03-31T14:00")  # Paris time, pinned
    fake_llm.script(Reply(content="Added."))
    await say(app, me, "yes")
    assert last_result(fake_llm) == "Added “Lunch with Ana” Tue 31 Mar 13:00-14:00."

    for call, problem in (
            (ToolCall("create_event", {"title": "Gym", "start": "sometime next week"}),
             "Error: 'sometime next week': I can't read that as a date and time. Give the "
             "time as YYYY-MM-DDTHH:MM in the user's time (Europe/Paris)."),
            (ToolCall("move_event", {"event_id": "nope-1", "title": "Gym",
                                     "start": "2026-03-31T10:00"}),
             "Error: there is no event with id nope-1 in the calendar (list_events shows the "
             "ids). The user was not asked."),
            (ToolCall("move_event", {"event_id": "standup-1", "title": "Standup",
                                     "start": "2026-03-31T10:00"}),
             "Error: that is a recurring event: moving one occurrence is not supported yet; "
             "the user can change it in their calendar app. They were not asked.")):
        fake_llm.script(Reply(tool_calls=[call]), Reply(content="Couldn't."))
        reply = await say(app, me, "do it")
        assert not reply.prompts and last_result(fake_llm) == problem
    assert len(await app.approvals.store.list(me)) == 1  # only the lunch was ever asked


async def test_an_ics_subscription_is_read_with_its_recurrence(app_factory, fake_llm,
                                                               secret_key, ics_url):
    app, me = await connected_app(app_factory, {"kind": "ics", "url": ics_url})
    fake_llm.script(Reply(tool_calls=[ToolCall("list_events", {
        "day": "2026-03-23", "until": "2026-03-30"})]), Reply(content="Two standups."))
    await say(app, me, "standups this week and last?")
    assert events_listed(fake_llm).splitlines() == [
        "Mon 23 Mar 09:30-09:45 Standup [id standup-1]",
        "Mon 30 Mar 09:30-09:45 Standup [id standup-1]"]
    fake_llm.script(Reply(tool_calls=[ToolCall("create_event", {
        "title": "x", "start": "2026-03-31T10:00"})]), Reply(content="It's read-only."))
    reply = await say(app, me, "add x tomorrow at 10")
    # Checked before asking: nobody is asked to approve what cannot be done.
    assert not reply.prompts and reply.text == "It's read-only."
    assert "read-only subscription" in last_result(fake_llm)
    assert await app.approvals.store.list(me) == []


async def test_no_calendar_connected_is_said_plainly(app_factory, fake_llm, secret_key):
    app = await app_factory(clock=FakeClock(MONDAY_MORNING))
    me = (await app.ensure_owner()).id
    fake_llm.script(Reply(tool_calls=[ToolCall("list_events", {})]), Reply(content="None."))
    await say(app, me, "what's on?")
    assert "no calendar is connected" in last_result(fake_llm)


def _padded_feed(size: int) -> bytes:
    """STANDUP with filler events ahead of it, about `size` bytes: the event that matters
    comes last, so a feed cut short loses it."""
    filler = "".join(
        f"BEGIN:VEVENT\nUID:filler-{i}\nDTSTAMP:20260301T000000Z\n"
        f"DTSTART:20200101T000000Z\nDTEND:20200101T010000Z\nSUMMARY:{'x' * 200}\nEND:VEVENT\n"
        for i in range(size // 300))
    head, tail = STANDUP.split("BEGIN:VEVENT", 1)
    return (head + filler + "BEGIN:VEVENT" + tail).encode()


@pytest.fixture
async def slow_feed_url():
    """A feed of about 260 KB sent in small pieces, as a slow network delivers it."""
    body = _padded_feed(260_000)
    app = web.Application()

    async def feed(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/calendar"})
        await response.prepare(request)
        for start in range(0, len(body), 8192):
            await response.write(body[start:start + 8192])
            await asyncio.sleep(0)  # let each piece go out on its own
        await response.write_eof()
        return response

    app.router.add_get("/big.ics", feed)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    yield f"http://127.0.0.1:{runner.addresses[0][1]}/big.ics", len(body)
    await runner.cleanup()


async def test_a_large_feed_arriving_in_pieces_is_read_whole(app_factory, fake_llm,
                                                             secret_key, slow_feed_url):
    url, size = slow_feed_url
    assert size > 250_000
    app, me = await connected_app(app_factory, {"kind": "ics", "url": url})
    fake_llm.script(Reply(tool_calls=[ToolCall("list_events", {"day": "today"})]),
                    Reply(content="Standup."))
    await say(app, me, "what's on today?")
    assert events_listed(fake_llm) == "Mon 30 Mar 09:30-09:45 Standup [id standup-1]"


async def test_a_feed_over_the_limit_is_an_error_not_a_cut_calendar(
        app_factory, fake_llm, secret_key, slow_feed_url, monkeypatch):
    from agents.calendar import sources

    url, size = slow_feed_url
    monkeypatch.setattr(sources, "MAX_FEED_BYTES", size // 2)
    app, me = await connected_app(app_factory, {"kind": "ics", "url": url})
    fake_llm.script(Reply(tool_calls=[ToolCall("list_events", {"day": "today"})]),
                    Reply(content="Too big."))
    await say(app, me, "what's on today?")
    result = last_result(fake_llm)
    assert "larger than" in result and "Standup" not in result
