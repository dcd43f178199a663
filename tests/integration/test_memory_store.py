"""The memory store on both databases: facts per person, keyword search, closing, the
extraction queue."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.contracts.clock import FakeClock
from bot.memory.facts import Closed, FactStore, Kind
from bot.memory.queue import FIRST_RETRY, MAX_ATTEMPTS, ExtractionQueue, Job
from bot.people.users import UserStore

NOON = datetime(2026, 1, 5, 12, tzinfo=UTC)


async def _people(db, clock):  # type: ignore[no-untyped-def]
    users = UserStore(db)
    for uid in ("alice", "bob"):
        await users.ensure(uid, display_name=uid.title(), timezone="UTC", is_owner=False,
                           at=clock.now())


async def test_a_persons_facts_are_found_by_their_words_and_never_by_another_person(db):
    clock = FakeClock(NOON)
    await _people(db, clock)
    store = FactStore(db, clock)
    mia = await store.add("alice", "Daughter Mia is 7", Kind.PERSON, source_turn="t1")
    await store.add("alice", "Prefers tea to coffee", Kind.PREFERENCE, source_turn="t1")
    await store.add("bob", "Daughter Mia plays the violin", Kind.PERSON, source_turn="t9")
    found = await store.search("alice", "What should I get Mia for her birthday?")
    assert [f.text for f in found] == ["Daughter Mia is 7"]
    assert found[0].id == mia.id and found[0].kind is Kind.PERSON
    assert found[0].source_turn == "t1" and found[0].valid_from == NOON
    assert [f.text for f in await store.search("bob", "mia")] == \
        ["Daughter Mia plays the violin"]
    assert await store.search("alice", "violin") == []
    # Stemming: "daughters" finds "Daughter"; a message of stopwords finds nothing.
    assert [f.text for f in await store.search("alice", "my daughters")] == \
        ["Daughter Mia is 7"]
    assert await store.search("alice", "what is it?") == []
    assert await store.search("alice", "don't", every=True) == []  # a Postgres stop word


async def test_a_replaced_fact_is_closed_not_deleted_and_leaves_the_search(db):
    clock = FakeClock(NOON)
    await _people(db, clock)
    store = FactStore(db, clock)
    porto = await store.add("alice", "Lives in Porto", source_turn="t1")
    clock.advance(days=30)
    lisbon = await store.add("alice", "Lives in Lisbon", source_turn="t2", replaces=[porto.id])
    assert [f.text for f in await store.open_facts("alice")] == ["Lives in Lisbon"]
    assert [f.text for f in await store.search("alice", "where do I live")] == \
        ["Lives in Lisbon"]
    old = await store.get("alice", porto.id)
    assert old is not None and old.valid_to == clock.now() and old.closed_reason == "replaced"
    assert [f.text for f in await store.history("alice")] == ["Lives in Porto",
                                                              "Lives in Lisbon"]
    assert lisbon is not None


async def test_duplicates_are_merged_and_another_persons_ids_are_never_closed(db):
    clock = FakeClock(NOON)
    await _people(db, clock)
    store = FactStore(db, clock)
    first = await store.add("alice", "Allergic to peanuts")
    assert await store.add("alice", "allergic to  peanuts.") is None
    bobs = await store.add("bob", "Allergic to peanuts")  # another person: their own fact
    assert bobs is not None
    # Alice's new fact claims to replace Bob's: Bob's fact stays open.
    await store.add("alice", "Allergic to shellfish", replaces=[bobs.id])
    assert [f.text for f in await store.open_facts("bob")] == ["Allergic to peanuts"]
    assert await store.close("alice", [bobs.id], Closed.FORGOTTEN) == []
    closed = await store.close("alice", [first.id], Closed.FORGOTTEN)
    assert [f.text for f in closed] == ["Allergic to peanuts"]
    assert [f.text for f in await store.open_facts("alice")] == ["Allergic to shellfish"]
    assert await store.forget_all("alice") == 1
    assert await store.open_facts("alice") == []
    assert len(await store.open_facts("bob")) == 1


async def test_search_words_are_data_not_query_syntax(db):
    clock = FakeClock(NOON)
    await _people(db, clock)
    store = FactStore(db, clock)
    await store.add("alice", "Works at ACME (the rocket company)")
    for hostile in ['"acme', "acme OR * NEAR(", "acme:* & !x | (", "acme'; DROP TABLE x; --"]:
        assert [f.text for f in await store.search("alice", hostile)] == \
            ["Works at ACME (the rocket company)"], hostile


async def test_the_version_moves_with_every_change(db):
    clock = FakeClock(NOON)
    await _people(db, clock)
    store = FactStore(db, clock)
    assert await store.version("alice") == 0
    fact = await store.add("alice", "Likes jazz")
    assert await store.version("alice") == 1
    await store.close("alice", [fact.id], Closed.FORGOTTEN)
    assert await store.version("alice") == 2
    assert await store.version("bob") == 0


async def test_a_failed_extraction_is_retried_later_and_given_up_in_the_end(db):
    clock = FakeClock(NOON)
    queue = ExtractionQueue(db)
    job = Job("turn-1", "alice", "I moved to Lisbon", "Noted!")
    assert await queue.put(job, clock.now())
    assert not await queue.put(job, clock.now())  # a redone turn is queued once
    assert await queue.claim_due(clock.now()) == []  # claimed by the first run
    assert await queue.failed(job, "LLMServerError: 500", clock.now())
    assert await queue.claim_due(clock.now()) == []  # not due yet
    clock.advance(seconds=FIRST_RETRY.total_seconds())
    [again] = await queue.claim_due(clock.now())
    assert again.attempts == 1 and again.said == "I moved to Lisbon"
    assert await queue.claim_due(clock.now()) == []  # claimed: a second pass gets nothing
    assert not await queue.failed(Job("turn-1", "alice", "", "", MAX_ATTEMPTS - 1), "x",
                                  clock.now())
    assert await queue.pending() == 0
