"""Events stored before they are acknowledged (triggers.event_store): patterns pick the events,
a failed handler gets the event again (at-least-once), an event is done only after the
effect, and one that always fails is given up with its reason. On SQLite and Postgres."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.contracts.clock import FakeClock
from triggers.event_store import StoredEventBus
from triggers.events import Event, EventPattern


def test_patterns_match_source_type_and_fields():
    mail = Event("email", "received", {"from": "Ship@Amazon.com", "meta": {"size": 3}})
    assert EventPattern("email", "rec*").matches(mail)
    assert EventPattern(fields={"from": "*@amazon.com", "meta.size": 3}).matches(mail)
    assert not EventPattern("email", "sent").matches(mail)
    assert not EventPattern(fields={"meta.size": 4}).matches(mail)
    assert not EventPattern(fields={"to": "*"}).matches(mail)  # a missing field never matches


def clock() -> FakeClock:
    return FakeClock(datetime(2026, 3, 1, 9, tzinfo=UTC))


async def test_a_handler_that_fails_gets_the_event_again_until_it_succeeds(db):
    bus = StoredEventBus(db, clock(), retry_seconds=0)
    seen: list[str] = []

    async def flaky(event: Event) -> None:
        seen.append(event.id)
        if len(seen) < 3:
            raise RuntimeError("database unavailable")

    bus.subscribe(EventPattern("home"), flaky)
    await bus.start()
    assert await bus.publish(Event("home", "door.ring", {"who": "courier"}, id="e1"))
    await bus.publish(Event("garden", "rain", id="e2"))  # no subscriber: nothing happens
    await bus.drain()
    await bus.stop()
    assert seen == ["e1", "e1", "e1"] and await bus.count("failed") == 0
    assert await bus.count("done") == 2


async def test_an_event_that_always_fails_is_given_up_after_max_attempts(db):
    bus = StoredEventBus(db, clock(), max_attempts=2, retry_seconds=0)

    async def broken(event: Event) -> None:
        raise RuntimeError("always")

    bus.subscribe(EventPattern(), broken)
    await bus.start()
    await bus.publish(Event("a", "b", id="x"))
    await bus.drain()
    await bus.stop()
    [row] = await db.fetch("SELECT id, status, attempts, error FROM events")
    assert (row["id"], row["status"], row["attempts"]) == ("x", "failed", 2)
    assert row["error"] == "RuntimeError: always"


async def test_an_id_sent_again_is_stored_once_and_runs_once(db):
    bus = StoredEventBus(db, clock())
    seen: list[dict[str, object]] = []

    async def record(event: Event) -> None:
        seen.append(dict(event.data))

    bus.subscribe(EventPattern(), record)
    assert await bus.publish(Event("mail", "in", {"n": 1}, id="same"))
    assert not await bus.publish(Event("mail", "in", {"n": 2}, id="same"))
    await bus.drain()
    assert seen == [{"n": 1}]


async def test_an_event_a_dead_process_was_running_is_run_again(db, db_url):
    """Left `processing` (the process died mid-dispatch): the next start claims it again."""
    from bot.app.database import open_database

    first = StoredEventBus(db, clock())
    await first.publish(Event("home", "door.ring", id="cut-short"))
    assert await first._claim() is not None  # ...and then the process died
    later = await open_database(db_url)
    try:
        restarted = clock()
        restarted.advance(seconds=121)  # Postgres: a claim is stale after stale_seconds
        again = StoredEventBus(later, restarted)
        seen: list[str] = []

        async def record(event: Event) -> None:
            seen.append(event.id)

        again.subscribe(EventPattern(), record)
        await again.start()
        await again.drain()
        await again.stop()
    finally:
        await later.close()
    assert seen == ["cut-short"]
