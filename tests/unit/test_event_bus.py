"""The in-process event bus: patterns pick the events, a failed handler gets the event
again (at-least-once), and an event is acknowledged only after the effect."""

from __future__ import annotations

from triggers.events import Event, EventPattern, InProcessEventBus


def test_patterns_match_source_type_and_fields():
    mail = Event("email", "received", {"from": "Ship@Amazon.com", "meta": {"size": 3}})
    assert EventPattern("email", "rec*").matches(mail)
    assert EventPattern(fields={"from": "*@amazon.com", "meta.size": 3}).matches(mail)
    assert not EventPattern("email", "sent").matches(mail)
    assert not EventPattern(fields={"meta.size": 4}).matches(mail)
    assert not EventPattern(fields={"to": "*"}).matches(mail)  # a missing field never matches


async def test_a_handler_that_fails_gets_the_event_again_until_it_succeeds():
    bus = InProcessEventBus(retry_delay=0)
    seen: list[str] = []

    async def flaky(event: Event) -> None:
        seen.append(event.id)
        if len(seen) < 3:
            raise RuntimeError("database unavailable")

    bus.subscribe(EventPattern("home"), flaky)
    await bus.start()
    await bus.publish(Event("home", "door.ring", id="e1"))
    await bus.publish(Event("garden", "rain", id="e2"))  # no subscriber: nothing happens
    await bus.drain()
    await bus.stop()
    assert seen == ["e1", "e1", "e1"] and bus.dead == []


async def test_an_event_that_always_fails_is_given_up_after_max_attempts():
    bus = InProcessEventBus(max_attempts=2, retry_delay=0)

    async def broken(event: Event) -> None:
        raise RuntimeError("always")

    bus.subscribe(EventPattern(), broken)
    await bus.start()
    await bus.publish(Event("a", "b", id="x"))
    await bus.drain()
    await bus.stop()
    assert [e.id for e in bus.dead] == ["x"]
