"""Approval state changes only by compare-and-set: decided once, executed once, expired once."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from bot.approvals.store import ApprovalStore
from bot.contracts.approvals import ApprovalStatus
from bot.people.users import UserStore

NOW = datetime(2026, 1, 5, 9, tzinfo=UTC)


async def store_with_user(db) -> ApprovalStore:
    await UserStore(db).ensure("u1", at=NOW)
    await UserStore(db).ensure("u2", at=NOW)
    return ApprovalStore(db, timeout=timedelta(minutes=30))


async def make(store: ApprovalStore, user: str = "u1", n: int = 1):
    return await store.create(user_id=user, call_id=f"c{n}", tool_name="send_email",
                              arguments={"to": "a@b.c", "n": n}, summary=f"Send email {n}",
                              details={"to": "a@b.c"}, at=NOW)


async def test_create_binds_the_exact_arguments_and_a_short_code(db):
    store = await store_with_user(db)
    approval = await make(store)
    loaded = await store.get(approval.id)
    assert loaded == approval
    assert loaded.intact() and len(loaded.code) == 4 and loaded.code.isdigit()
    assert loaded.status is ApprovalStatus.PENDING
    assert loaded.expires_at == NOW + timedelta(minutes=30)
    tampered = type(loaded)(**{**loaded.__dict__, "arguments": {"to": "evil@x.y", "n": 1}})
    assert not tampered.intact()


async def test_codes_are_unique_among_a_users_pending_approvals(db):
    store = await store_with_user(db)
    codes = [(await make(store, n=i)).code for i in range(30)]
    assert len(set(codes)) == 30


async def test_a_decision_is_applied_once_even_concurrently(db):
    store = await store_with_user(db)
    approval = await make(store)
    results = await asyncio.gather(*[
        store.decide(approval.id, ApprovalStatus.APPROVED, by="test:u1", at=NOW)
        for _ in range(10)])
    assert results.count(True) == 1
    assert not await store.decide(approval.id, ApprovalStatus.REJECTED, by="x", at=NOW)
    runs = await asyncio.gather(*[store.begin_execution(approval.id, NOW) for _ in range(10)])
    assert runs.count(True) == 1
    await store.finish(approval.id, ApprovalStatus.EXECUTED, "sent")
    done = await store.get(approval.id)
    assert done.status is ApprovalStatus.EXECUTED and done.result == "sent"
    assert done.decided_by == "test:u1"


async def test_nothing_runs_without_an_approval(db):
    store = await store_with_user(db)
    approval = await make(store)
    assert not await store.begin_execution(approval.id, NOW)  # still pending
    await store.decide(approval.id, ApprovalStatus.REJECTED, by="u1", at=NOW)
    assert not await store.begin_execution(approval.id, NOW)
    assert not await store.begin_execution("no-such-id", NOW)


async def test_expiry_is_a_state_and_happens_once(db):
    store = await store_with_user(db)
    approval = await make(store)
    later = NOW + timedelta(minutes=31)
    assert not await store.decide(approval.id, ApprovalStatus.APPROVED, by="u1", at=later)
    assert await store.pending("u1", later) == []
    first, second = await asyncio.gather(store.expire_due(later), store.expire_due(later))
    assert len(first) + len(second) == 1
    assert (await store.get(approval.id)).status is ApprovalStatus.EXPIRED


async def test_pending_is_per_user_and_in_order(db):
    store = await store_with_user(db)
    a = await make(store, "u1", 1)
    b = await make(store, "u1", 2)
    await make(store, "u2", 3)
    assert [p.id for p in await store.pending("u1", NOW)] == [a.id, b.id]


async def test_an_interrupted_execution_fails_closed(db):
    store = await store_with_user(db)
    approval = await make(store)
    await store.decide(approval.id, ApprovalStatus.APPROVED, by="u1", at=NOW)
    assert await store.begin_execution(approval.id, NOW)
    assert len(await store.interrupt_lapsed(NOW + timedelta(minutes=5))) == 1
    # It was running: it may have acted, so its outcome is unknown (never "done", never rerun).
    assert (await store.get(approval.id)).status is ApprovalStatus.UNKNOWN
    assert not await store.begin_execution(approval.id, NOW)


async def test_a_running_execution_keeps_its_lease_and_a_lapsed_one_is_settled_once(db):
    from bot.approvals.store import INTERRUPTED

    store = await store_with_user(db)  # leases of 30 seconds
    approval = await make(store)
    await store.decide(approval.id, ApprovalStatus.APPROVED, by="u1", at=NOW)
    assert await store.begin_execution(approval.id, NOW)
    assert await store.interrupt_lapsed(NOW + timedelta(seconds=20)) == []
    assert await store.renew_lease(approval.id, NOW + timedelta(seconds=20))  # the heartbeat
    assert await store.interrupt_lapsed(NOW + timedelta(seconds=45)) == []
    later = NOW + timedelta(seconds=51)
    first, second = await asyncio.gather(store.interrupt_lapsed(later),
                                         store.interrupt_lapsed(later))
    [settled] = first + second
    assert (settled.id, settled.status, settled.result) == (
        approval.id, ApprovalStatus.UNKNOWN, INTERRUPTED)
    assert not await store.renew_lease(approval.id, later)  # the runner learns it lost it
    # and cannot claim success
    assert not await store.finish(approval.id, ApprovalStatus.EXECUTED, "sent")
    assert (await store.get(approval.id)).status is ApprovalStatus.UNKNOWN


async def test_an_approval_that_never_started_fails_visibly_and_can_never_start(db):
    from bot.approvals.store import NOT_STARTED

    store = await store_with_user(db)
    approval = await make(store)
    await store.decide(approval.id, ApprovalStatus.APPROVED, by="u1", at=NOW)
    assert await store.interrupt_lapsed(NOW + timedelta(seconds=29)) == []
    [settled] = await store.interrupt_lapsed(NOW + timedelta(seconds=31))
    assert (settled.status, settled.result) == (ApprovalStatus.INTERRUPTED, NOT_STARTED)
    assert not await store.begin_execution(approval.id, NOW + timedelta(seconds=31))
    assert [a.id for a in await store.unreported("u1")] == [approval.id]  # the LLM hears


async def test_at_start_up_the_sole_owner_settles_every_unfinished_request(db):
    store = await store_with_user(db)
    running, decided, waiting = [await make(store, n=i) for i in range(3)]
    for a in (running, decided):
        await store.decide(a.id, ApprovalStatus.APPROVED, by="u1", at=NOW)
    await store.begin_execution(running.id, NOW)
    settled = await store.interrupt_all(NOW)  # leases still fresh: the process is gone anyway
    assert sorted(a.id for a in settled) == sorted([running.id, decided.id])
    assert (await store.get(waiting.id)).status is ApprovalStatus.PENDING


async def test_requests_made_at_one_instant_keep_their_order(db):
    store = await store_with_user(db)
    made = [await make(store, n=i) for i in range(12)]  # same created_at, random ids
    assert [p.id for p in await store.pending("u1", NOW)] == [a.id for a in made]
    assert [a.id for a in await store.list("u1")] == [a.id for a in reversed(made)]


async def test_an_asked_change_is_taken_once_and_only_while_the_request_waits(db):
    store = await store_with_user(db)
    older, newer, decided = (await make(store, n=1), await make(store, n=2),
                             await make(store, n=3))
    assert await store.decide(decided.id, ApprovalStatus.REJECTED, by="test:u1", at=NOW)
    assert not await store.ask_change(decided.id, NOW)  # decided: nothing to change
    assert await store.ask_change(older.id, NOW)
    assert await store.ask_change(newer.id, NOW + timedelta(seconds=1))
    assert await store.take_change_asked("u2", NOW) is None  # another user's asks stay
    taken = await store.take_change_asked("u1", NOW)
    assert taken is not None and taken.id == newer.id
    assert await store.take_change_asked("u1", NOW) is None  # used up
    assert await store.ask_change(older.id, NOW)
    assert await store.take_change_asked("u1", NOW + timedelta(hours=1)) is None  # expired
