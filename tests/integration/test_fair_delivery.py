"""Fair delivery (bot.gateway.delivery): each address a queue of its own, urgent before bulk,
no address waiting on another, a paced address holding no slot, the rest of a long message
after an urgent one, and two deliverers racing without a double send or a broken order.
Every test runs on SQLite and on Postgres."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from datetime import UTC, datetime

from bot.app.database import open_database
from bot.channel import ChannelSender, PartlySent
from bot.config.policies import DeliveryPolicy
from bot.contracts.channels import ChannelTraits
from bot.contracts.clock import FakeClock, SystemClock
from bot.contracts.envelopes import OutboundMessage
from bot.db import Database
from bot.gateway.delivery import OutboxDeliverer
from bot.gateway.outbox import Lane, OutboxStore

WAIT = 20.0  # generous: the machine is shared


class Recorder(ChannelSender):
    """Sends instantly and records (address, text); `before` runs ahead of each send."""

    traits = ChannelTraits("test", "Test")

    def __init__(self, before: Callable[[OutboundMessage], object] | None = None) -> None:
        self.sent: list[tuple[str, str]] = []
        self.before = before

    async def send(self, message: OutboundMessage) -> str:
        if self.before is not None:
            result = self.before(message)
            if asyncio.iscoroutine(result):
                await result
        self.sent.append((message.address, message.text))
        return str(len(self.sent))

    def texts(self, address: str) -> list[str]:
        return [t for a, t in self.sent if a == address]


async def queue(store: OutboxStore, db: Database, address: str, text: str, lane: Lane,
                at: datetime) -> int:
    row = await store.enqueue(db, dedupe_key=f"{address}:{text}", user_id=None, channel="test",
                              address=address, text=text, at=at, lane=lane)
    assert row is not None
    return row


async def until(check: Callable[[], bool], what: str) -> None:
    for _ in range(int(WAIT / 0.02)):
        if check():
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"never happened: {what}")


async def test_urgent_messages_go_before_the_addresses_bulk_each_lane_in_order(db):
    clock = FakeClock(datetime(2026, 3, 1, 9, tzinfo=UTC))
    store = OutboxStore(db)
    for i in range(5):
        await queue(store, db, "ana", f"reminder {i}", Lane.BULK, clock.now())
    await queue(store, db, "ana", "reply 1", Lane.URGENT, clock.now())
    await queue(store, db, "ana", "reply 2", Lane.URGENT, clock.now())
    sender = Recorder()
    assert await OutboxDeliverer(store, {"test": sender}, clock).deliver_due() == 7
    assert sender.texts("ana") == ["reply 1", "reply 2", *(f"reminder {i}" for i in range(5))]


async def test_a_message_waiting_for_a_retry_holds_back_its_lane_and_the_bulk_behind_it(db):
    from bot.channel import TransientSendError

    clock = FakeClock(datetime(2026, 3, 1, 9, tzinfo=UTC))
    store = OutboxStore(db)
    await queue(store, db, "ana", "reply 1", Lane.URGENT, clock.now())
    await queue(store, db, "ana", "reply 2", Lane.URGENT, clock.now())
    await queue(store, db, "ana", "reminder", Lane.BULK, clock.now())
    failures = [TransientSendError("busy", retry_after=5)]

    def flaky(message: OutboundMessage) -> None:
        if message.text == "reply 1" and failures:
            raise failures.pop()

    sender = Recorder(flaky)
    deliverer = OutboxDeliverer(store, {"test": sender}, clock)
    assert await deliverer.deliver_due() == 0
    assert sender.sent == []  # reply 2 and the reminder wait behind reply 1
    clock.advance(seconds=5)
    assert await deliverer.deliver_due() == 3
    assert sender.texts("ana") == ["reply 1", "reply 2", "reminder"]


async def test_a_backlog_to_one_address_never_holds_another_address(db):
    """No batch barrier: while the first of 300 messages to one chat is stuck in its send,
    a message to another chat goes at once."""
    store = OutboxStore(db)
    clock = SystemClock()
    release = asyncio.Event()
    stuck = asyncio.Event()

    async def slow_for_ana(message: OutboundMessage) -> None:
        if message.address == "ana":
            stuck.set()
            await release.wait()

    sender = Recorder(slow_for_ana)
    async with db.transaction() as tx:
        for i in range(300):
            await store.enqueue(tx, dedupe_key=f"b{i}", user_id=None, channel="test",
                                address="ana", text=f"bulk {i}", at=clock.now(), lane=Lane.BULK)
    deliverer = OutboxDeliverer(store, {"test": sender}, clock,
                                DeliveryPolicy(concurrency=4, poll_seconds=0.05))
    running = asyncio.create_task(deliverer.run())
    try:
        await until(stuck.is_set, "ana's first send under way (and stuck)")
        await queue(store, db, "ben", "your answer", Lane.URGENT, clock.now())
        deliverer.wake()
        await until(lambda: sender.texts("ben") == ["your answer"], "ben's answer")
        assert sender.texts("ana") == []
        release.set()
        await until(lambda: len(sender.texts("ana")) == 300, "ana's backlog")
        assert sender.texts("ana") == [f"bulk {i}" for i in range(300)]
    finally:
        release.set()
        deliverer.stop()
        await running


class PacedRecorder(Recorder):
    """Like Telegram: after one message, an address must wait `pace` seconds."""

    def __init__(self, pace: float) -> None:
        super().__init__()
        self.pace = pace
        self.asked: list[str] = []

    def ready_in(self, address: str) -> float:
        self.asked.append(address)
        return self.pace if address in {a for a, _ in self.sent} else 0.0


async def test_an_address_waiting_for_its_pace_holds_no_delivery_slot(db):
    store = OutboxStore(db)
    clock = SystemClock()
    sender = PacedRecorder(pace=60.0)
    for i in range(3):
        await queue(store, db, "ana", f"ana {i}", Lane.URGENT, clock.now())
    deliverer = OutboxDeliverer(store, {"test": sender}, clock,
                                DeliveryPolicy(concurrency=1, poll_seconds=0.05))
    running = asyncio.create_task(deliverer.run())
    try:
        await until(lambda: sender.texts("ana") == ["ana 0"], "ana's first message")
        await queue(store, db, "ben", "ben 0", Lane.URGENT, clock.now())
        deliverer.wake()
        # One slot only, and ana must wait a minute: ben still goes now.
        await until(lambda: sender.texts("ben") == ["ben 0"], "ben's message")
        assert sender.texts("ana") == ["ana 0"]
        asked = len(sender.asked)
        await asyncio.sleep(0.3)  # scans meanwhile do not cut ana's wait short
        assert len(sender.asked) - asked <= 1
    finally:
        deliverer.stop()
        await running


class PartsRecorder(Recorder):
    """A long message is "part|part|...": two parts per call, the rest handed back."""

    def __init__(self, before: Callable[[OutboundMessage], object] | None = None) -> None:
        super().__init__(before)
        self.parts: list[str] = []

    async def send(self, message: OutboundMessage) -> str:
        if self.before is not None:
            result = self.before(message)
            if asyncio.iscoroutine(result):
                await result
        parts = message.text.split("|")
        end = min(len(parts), message.parts_sent + 2)
        self.parts += parts[message.parts_sent:end]
        if end < len(parts):
            raise PartlySent(end)
        return str(len(self.parts))


async def test_the_rest_of_a_long_message_waits_for_an_urgent_one_but_not_for_bulk(db):
    clock = FakeClock(datetime(2026, 3, 1, 9, tzinfo=UTC))
    store = OutboxStore(db)
    await queue(store, db, "ana", "L1|L2|L3|L4|L5|L6", Lane.URGENT, clock.now())
    await queue(store, db, "ana", "reminder", Lane.BULK, clock.now())
    asked: list[int] = []

    async def person_writes_after_the_first_parts(message: OutboundMessage) -> None:
        if message.text.startswith("L1") and not asked:
            asked.append(message.id)
            await queue(store, db, "ana", "the answer to her new message", Lane.URGENT,
                        clock.now())

    sender = PartsRecorder(person_writes_after_the_first_parts)
    assert await OutboxDeliverer(store, {"test": sender}, clock).deliver_due() == 3
    assert sender.parts == ["L1", "L2", "the answer to her new message", "L3", "L4", "L5",
                            "L6", "reminder"]
    [long] = [r for r in await store.list("sent") if r["id"] == asked[0]]
    assert long["parts_sent"] == 4 and long["attempts"] - long["waits"] == 1  # no failure


async def test_two_deliverers_racing_keep_every_lane_in_order_and_send_each_message_once(
        db, db_url):
    """Two processes' deliverers (two connections on Postgres) on one outbox."""
    clock = FakeClock(datetime(2026, 3, 1, 9, tzinfo=UTC))
    store = OutboxStore(db)
    rng = random.Random(7)
    queued: dict[str, list[tuple[Lane, str]]] = {}
    async with db.transaction() as tx:
        for i in range(60):
            address, lane = f"a{i % 3}", rng.choice([Lane.URGENT, Lane.BULK])
            await store.enqueue(tx, dedupe_key=f"m{i}", user_id=None, channel="test",
                                address=address, text=f"m{i}", at=clock.now(), lane=lane)
            queued.setdefault(address, []).append((lane, f"m{i}"))

    async def jitter(message: OutboundMessage) -> None:
        await asyncio.sleep(rng.random() / 200)

    sender = Recorder(jitter)
    other_db = await open_database(db_url) if db.dialect == "postgres" else db
    try:
        first = OutboxDeliverer(store, {"test": sender}, clock)
        second = OutboxDeliverer(OutboxStore(other_db), {"test": sender}, clock)
        await asyncio.gather(first.deliver_due(), second.deliver_due(), second.deliver_due())
        await first.deliver_due()
    finally:
        if other_db is not db:
            await other_db.close()
    assert sorted(t for _, t in sender.sent) == sorted(f"m{i}" for i in range(60))
    for address, messages in queued.items():
        expected = [t for lane in (Lane.URGENT, Lane.BULK) for ln, t in messages if ln is lane]
        assert sender.texts(address) == expected
