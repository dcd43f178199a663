"""The durable message path, as a person on a channel experiences it, on SQLite and Postgres."""

from __future__ import annotations

import asyncio

import pytest

from bot.channel import PermanentSendError, TransientSendError
from bot.config.policies import AccessSettings, ChannelAccess
from bot.config.sections import GatewaySettings
from bot.gateway.deps import ReceiveResult
from bot.gateway.outbox import Lane
from tests.fakes.fake_openai import Reply as LLMReply
from tests.helpers import RecordingSender, incoming, said


@pytest.fixture
async def gateway_app(db_url, app_factory):
    """An app on SQLite or Postgres with a recording `test` channel where 'alice' and 'bob'
    are allowed; everyone else must pair. (db_url comes first: fixtures tear down in reverse,
    so the apps close before the database is dropped.)"""

    async def make(**overrides):
        access = AccessSettings(channels={"test": ChannelAccess(
            policy="pairing", allow=["alice", "bob"])})
        app = await app_factory(database_url=db_url, access=access, **overrides)
        sender = RecordingSender("test")
        app.add_channel(sender)
        await app.start()
        return app, sender

    return make


async def test_a_message_is_answered_through_the_outbox(gateway_app, fake_llm):
    app, sender = await gateway_app()
    fake_llm.script(LLMReply(content="Hello Alice!"))
    assert await app.gateway.receive(incoming("hi", address="alice")) is ReceiveResult.ACCEPTED
    await app.gateway.wait_idle()
    assert sender.sent == [("alice", "Hello Alice!")]
    assert await app.outbound.outbox.count("sent") == 1


async def test_the_same_message_delivered_three_times_at_once_is_processed_once(
        gateway_app, fake_llm):
    app, sender = await gateway_app()
    fake_llm.responder = lambda req: LLMReply(content="once")
    msg = incoming("hello", address="alice", external_id="update-42")
    results = await asyncio.gather(*[app.gateway.receive(msg) for _ in range(3)])
    assert sorted(r.value for r in results) == ["accepted", "duplicate", "duplicate"]
    await app.gateway.wait_idle()
    assert fake_llm.calls == 1
    assert sender.texts() == ["once"]


async def test_users_run_in_parallel_and_each_user_one_turn_at_a_time(gateway_app, fake_llm):
    # mid_turn queue: each message its own turn (with steer, a message that arrives before
    # the running turn's next LLM call joins it: tests/integration/test_steering.py).
    app, sender = await gateway_app(gateway=GatewaySettings(mid_turn="queue"))
    in_flight: dict[str, int] = {"alice": 0, "bob": 0}
    overlap = asyncio.Event()
    order: list[str] = []

    async def respond(req):
        text = said(req["messages"][-1]["content"])
        who = text.split("-")[0]
        in_flight[who] += 1
        assert in_flight[who] == 1, f"two turns at once for {who}"
        order.append(text)
        if all(in_flight.values()):
            overlap.set()
        # Both users must be in a turn at the same moment, or this waits out its timeout.
        await asyncio.wait_for(overlap.wait(), 5)
        await asyncio.sleep(0.01)
        in_flight[who] -= 1
        return LLMReply(content=f"re {text}")

    fake_llm.responder = respond
    for i in range(3):
        await app.gateway.receive(incoming(f"alice-{i}", address="alice"))
    await app.gateway.receive(incoming("bob-0", address="bob"))
    await app.gateway.wait_idle()
    assert [t for t in order if t.startswith("alice")] == ["alice-0", "alice-1", "alice-2"]
    assert sender.texts("alice") == ["re alice-0", "re alice-1", "re alice-2"]
    assert sender.texts("bob") == ["re bob-0"]
    # Each of Alice's turns saw the ones before it.
    alice_last = next(r for r in fake_llm.requests
                      if said(r["messages"][-1]["content"]) == "alice-2")
    assert [said(m["content"]) for m in alice_last["messages"] if m["role"] == "user"] == [
        "alice-0", "alice-1", "alice-2"]


async def test_an_unknown_sender_gets_one_pairing_reply_and_never_reaches_the_llm(
        gateway_app, fake_llm):
    app, sender = await gateway_app()
    first = await app.gateway.receive(incoming("hello?", address="mallory", name="Mallory"))
    again = await app.gateway.receive(incoming("HELLO??", address="mallory"))
    await app.gateway.wait_idle()
    assert first is ReceiveResult.REJECTED and again is ReceiveResult.REJECTED
    assert fake_llm.calls == 0
    [reply] = sender.texts("mallory")
    pending = await app.access.list_pairings(app.clock.now())
    assert len(pending) == 1 and pending[0].code in reply
    assert pending[0].display_name == "Mallory"

    user = await app.access.approve(pending[0].code, app.clock.now())
    assert user is not None
    fake_llm.script(LLMReply(content="Welcome, Mallory."))
    assert await app.gateway.receive(incoming("hi again", address="mallory")) \
        is ReceiveResult.ACCEPTED
    await app.gateway.wait_idle()
    assert sender.texts("mallory")[-1] == "Welcome, Mallory."
    assert fake_llm.calls == 1


async def test_the_owner_approves_from_their_own_chat(gateway_app, fake_llm):
    app, sender = await gateway_app()
    await app.identities.link("test", "owner-phone", "owner", at=app.clock.now())
    await app.users.set_preferred_channel("owner", "test")
    await app.gateway.receive(incoming("hey", address="trent", name="Trent"))
    await app.gateway.wait_idle()
    [notice] = sender.texts("owner-phone")
    code = notice.split("Reply PAIR ")[1].split(" ")[0].rstrip(",")
    await app.gateway.receive(incoming(f"/pair approve {code}", address="owner-phone"))
    await app.gateway.wait_idle()
    assert sender.texts("owner-phone")[-1].startswith(f"Approved {code}")
    assert sender.texts("trent")[-1].startswith("You're in")
    assert fake_llm.calls == 0
    # Only the owner may approve.
    await app.gateway.receive(incoming("/pair list", address="alice"))
    await app.gateway.wait_idle()
    assert sender.texts("alice")[-1] == "Only the owner can approve new people."


async def test_pairing_requests_are_capped_and_expire(gateway_app, fake_llm):
    app, sender = await gateway_app()
    for i in range(5):
        await app.gateway.receive(incoming("hi", address=f"stranger{i}"))
        app.clock.advance(seconds=1)
    await app.gateway.wait_idle()
    pending = await app.access.list_pairings(app.clock.now())
    assert len(pending) == 3
    # Nobody is dropped without a word: the two oldest requests made room for the newest.
    assert len(sender.sent) == 5
    assert [p.address for p in pending] == ["stranger2", "stranger3", "stranger4"]
    app.clock.advance(minutes=61)
    assert await app.access.list_pairings(app.clock.now()) == []


async def test_allowlist_channel_ignores_strangers_silently(db_url, app_factory, fake_llm):
    access = AccessSettings(channels={"test": ChannelAccess(policy="allowlist", allow=["ok"])})
    app = await app_factory(database_url=db_url, access=access)
    sender = RecordingSender("test")
    app.add_channel(sender)
    await app.start()
    assert await app.gateway.receive(incoming("hi", address="nope")) is ReceiveResult.REJECTED
    await app.gateway.wait_idle()
    assert sender.sent == [] and fake_llm.calls == 0


async def test_a_blocked_user_is_ignored(gateway_app, fake_llm):
    app, sender = await gateway_app()
    fake_llm.script(LLMReply(content="hi"))
    await app.gateway.receive(incoming("first", address="alice"))
    await app.gateway.wait_idle()
    user = await app.identities.resolve("test", "alice")
    await app.users.set_blocked(user.id, True)
    assert await app.gateway.receive(incoming("second", address="alice")) \
        is ReceiveResult.REJECTED
    await app.gateway.wait_idle()
    assert sender.texts("alice") == ["hi"] and fake_llm.calls == 1


async def test_link_joins_a_second_channel_to_the_same_person(gateway_app, fake_llm):
    app, sender = await gateway_app()
    telegram = RecordingSender("telegram")
    app.add_channel(telegram)
    fake_llm.script(LLMReply(content="noted: blue"))
    await app.gateway.receive(incoming("my favourite colour is blue", address="alice"))
    await app.gateway.receive(incoming("/link", address="alice"))
    await app.gateway.wait_idle()
    code = sender.texts("alice")[-1].split("/link ")[1][:6]
    assert await app.gateway.receive(incoming(f"/link {code}", channel="telegram",
                                              address="tg-99")) is ReceiveResult.HANDLED
    await app.gateway.wait_idle()
    assert telegram.texts("tg-99") == ["Linked. I'll know you here too from now on."]
    fake_llm.script(LLMReply(content="blue"))
    await app.gateway.receive(incoming("what's my colour?", channel="telegram",
                                       address="tg-99"))
    await app.gateway.wait_idle()
    assert telegram.texts("tg-99")[-1] == "blue"
    contents = [said(m["content"]) for m in fake_llm.requests[-1]["messages"]]
    assert "my favourite colour is blue" in contents
    # A code works once.
    await app.gateway.receive(incoming(f"/link {code}", channel="telegram", address="tg-100"))
    await app.gateway.wait_idle()
    assert "unknown or has expired" in telegram.texts("tg-100")[0]


async def test_transient_send_failures_are_retried_and_permanent_ones_dead_lettered(
        gateway_app, fake_llm):
    app, _ = await gateway_app()
    flaky = RecordingSender("flaky", fail=[TransientSendError("busy", retry_after=30)])
    broken = RecordingSender("broken", fail=[PermanentSendError("chat not found")])
    app.add_channel(flaky)
    app.add_channel(broken)
    now = app.clock.now()
    async with app.db.transaction() as tx:
        await app.outbound.outbox.enqueue(tx, dedupe_key="a", user_id=None, channel="flaky",
                                              address="x", text="one", at=now, lane=Lane.URGENT)
        await app.outbound.outbox.enqueue(tx, dedupe_key="b", user_id=None,
                                              channel="broken", address="y", text="two", at=now,
                                              lane=Lane.URGENT)
        again = await app.outbound.outbox.enqueue(tx, dedupe_key="a", user_id=None,
                                                      channel="flaky", address="x", text="one",
                                                      at=now, lane=Lane.URGENT)
    assert again is None  # the same reply is never queued twice
    deliverer = app.outbound.deliverer
    await deliverer.deliver_due()
    assert flaky.sent == [] and await app.outbound.outbox.count("dead") == 1
    app.clock.advance(seconds=29)
    await deliverer.deliver_due()
    assert flaky.attempts == 1  # Retry-After honoured
    app.clock.advance(seconds=2)
    await deliverer.deliver_due()
    assert flaky.sent == [("x", "one")]
    dead = await app.outbound.outbox.list("dead")
    assert dead[0]["last_error"] == "chat not found"
    await asyncio.gather(deliverer.deliver_due(), deliverer.deliver_due())
    assert flaky.attempts == 2 and broken.attempts == 1  # nothing sent twice


async def test_two_deliverers_racing_send_each_message_once(gateway_app):
    from bot.gateway.delivery import OutboxDeliverer

    app, _ = await gateway_app()
    slow = RecordingSender("slow")
    app.add_channel(slow)
    async with app.db.transaction() as tx:
        for i in range(20):
            await app.outbound.outbox.enqueue(
                tx, dedupe_key=f"m{i}", user_id=None, channel="slow", address=f"a{i % 3}",
                text=f"m{i}", at=app.clock.now(), lane=Lane.URGENT)
    other = OutboxDeliverer(app.outbound.outbox, app.outbound.senders, app.clock)
    await asyncio.gather(app.outbound.deliverer.deliver_due(), other.deliver_due(),
                         other.deliver_due())
    await app.gateway.wait_idle()  # the app's own background deliverer may still be at it
    assert sorted(t for _, t in slow.sent) == sorted(f"m{i}" for i in range(20))
    assert [t for a, t in slow.sent if a == "a0"] == [f"m{i}" for i in range(0, 20, 3)]


async def test_retries_give_up_after_the_limit(gateway_app):
    app, _ = await gateway_app()
    down = RecordingSender("down", fail=[TransientSendError("503")] * 10)
    app.add_channel(down)
    await app.outbound.outbox.enqueue(app.db, dedupe_key="z", user_id=None, channel="down",
                                          address="x", text="hello", at=app.clock.now(),
                                          lane=Lane.URGENT)
    for _ in range(10):
        await app.outbound.deliverer.deliver_due()
        app.clock.advance(seconds=700)
    assert down.attempts == 6
    [row] = await app.outbound.outbox.list("dead")
    assert "gave up after 6 attempts" in row["last_error"]


async def test_a_long_run_of_flood_control_waits_never_drops_the_message(gateway_app):
    app, _ = await gateway_app()
    floods = [TransientSendError("flood", retry_after=3) for _ in range(10)]
    flaky = RecordingSender("flaky", fail=floods)
    app.add_channel(flaky)
    deliverer = app.outbound.deliverer
    await app.outbound.outbox.enqueue(app.db, dedupe_key="f", user_id=None, channel="flaky",
                                          address="x", text="hello", at=app.clock.now(),
                                          lane=Lane.URGENT)
    for _ in range(10):  # more refusals than max_attempts: each only says "wait 3 s"
        deliverer.wake()  # the app's own deliverer tries it; idle once it waits again
        await asyncio.wait_for(app.gateway.wait_idle(), 60)
        app.clock.advance(seconds=3)
    await asyncio.wait_for(app.gateway.wait_idle(), 60)
    assert flaky.attempts == 11
    assert flaky.sent == [("x", "hello")]
    assert await app.outbound.outbox.count("dead") == 0


async def test_a_channels_retry_after_is_the_wait_exactly_even_when_the_backoff_is_longer(
        gateway_app):
    app, _ = await gateway_app()
    flaky = RecordingSender("flaky", fail=[TransientSendError("503"), TransientSendError("503"),
                                           TransientSendError("flood", retry_after=1.5)])
    app.add_channel(flaky)
    deliverer = app.outbound.deliverer
    await app.outbound.outbox.enqueue(app.db, dedupe_key="r", user_id=None, channel="flaky",
                                          address="x", text="hello", at=app.clock.now(),
                                          lane=Lane.URGENT)
    await deliverer.deliver_due()  # 503: the backoff's 2 s
    app.clock.advance(seconds=2)
    await deliverer.deliver_due()  # 503 again: 4 s
    app.clock.advance(seconds=4)
    await deliverer.deliver_due()  # flood control: Telegram says 1.5 s (the backoff: 8 s)
    assert flaky.attempts == 3
    app.clock.advance(seconds=1.4)
    await deliverer.deliver_due()
    assert flaky.attempts == 3, "never earlier than the channel said"
    app.clock.advance(seconds=0.1)
    await deliverer.deliver_due()
    assert flaky.sent == [("x", "hello")], "and not later either"
