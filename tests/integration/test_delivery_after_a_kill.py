"""What a deliverer finds after another one was killed (Postgres: several processes deliver).

The chaos story (tests/e2e/test_chaos.py) once ended "never quiet: replies pending, attempts
0"; the question was whether a delivery loop stalls after a kill. It does not, by
construction, and this says so: a deliverer scans for due rows every `poll_seconds` and needs
no wake-up (one lost, or sent by a process that died, costs at most a poll); a row the killed
process had claimed holds its own address back, and no other, until `stale_sending_seconds`,
then is "outcome unknown" (never sent again) and the rest of that address's queue goes, in
order. (The chaos story's stall was its own: it killed processes that were still starting.)
"""

from __future__ import annotations

import asyncio

from bot.app.database import open_database
from bot.config.policies import DeliveryPolicy
from bot.contracts.clock import FakeClock
from bot.gateway.delivery import OutboxDeliverer
from bot.gateway.outbox import OUTCOME_UNKNOWN, Lane, OutboxStore
from tests.helpers import RecordingSender, until

STALE = 120.0


async def test_a_killed_deliverers_claim_holds_only_its_address_and_no_wake_up_is_needed(
        postgres_dsn: str) -> None:
    db = await open_database(postgres_dsn)
    clock = FakeClock()
    store = OutboxStore(db)

    async def queue(address: str, text: str) -> int:
        row = await store.enqueue(db, dedupe_key=f"{address}:{text}", user_id=None,
                                  channel="test", address=address, text=text, at=clock.now(),
                                  lane=Lane.URGENT)
        assert row is not None
        return row

    ana = [await queue("ana", f"ana {i}") for i in range(3)]
    # The process that was delivering to ana was killed mid-send: her first row stays
    # `sending`, claimed now.
    assert await store.claim(ana[0], clock.now())
    sender = RecordingSender()
    deliverer = OutboxDeliverer(store, {"test": sender}, clock, DeliveryPolicy(
        concurrency=4, poll_seconds=0.05, stale_sending_seconds=STALE))
    running = asyncio.create_task(deliverer.run())
    try:
        # Queued by another process, and nobody wakes this deliverer: its scan finds it.
        await queue("ben", "ben 0")
        await until(lambda: sender.texts("ben") == ["ben 0"], "ben's message, never woken")
        await queue("ben", "ben 1")  # a later scan: ana's row in doubt is still not stale
        await until(lambda: sender.texts("ben") == ["ben 0", "ben 1"], "ben's next, never woken")
        assert sender.texts("ana") == []  # held behind the row in doubt, not lost
        clock.advance(seconds=STALE + 1)  # the claim is stale now
        await until(lambda: sender.texts("ana") == ["ana 1", "ana 2"], "the rest of ana's queue")
        row = await store.get(ana[0])
        assert row is not None and (row["status"], row["last_error"]) == ("dead", OUTCOME_UNKNOWN)
        await queue("ben", "ben 2")
        await until(lambda: sender.texts("ben") == ["ben 0", "ben 1", "ben 2"], "ben's third")
    finally:
        deliverer.stop()
        await running
        await db.close()
    assert ("ana", "ana 0") not in sender.sent  # never sent twice: its outcome is unknown
