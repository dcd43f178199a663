"""The stores behind the loop's features, on SQLite and Postgres: the journal of a turn and its
sub-tasks, mid-turn messages closed once, traces kept per person, versioned summaries, and the
history read by seq."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.contracts.clock import FakeClock
from bot.contracts.envelopes import IncomingMessage
from bot.gateway.inbox import InboxStore
from bot.llm.port import LLMResponse
from bot.loop.journal import TurnJournal
from bot.loop.traces import TurnTrace
from bot.memory.history import HistoryStore
from bot.memory.summaries import Summary, SummaryStore
from bot.people.users import UserStore
from bot.turn.trace_store import TraceStore

NOW = datetime(2026, 1, 5, 9, tzinfo=UTC)


async def test_a_turns_journal_goes_with_its_sub_tasks_and_no_one_elses(db):
    journal = TurnJournal(db, FakeClock(NOW))
    for turn in ("inbox-1", "inbox-1/call_7", "inbox-10", "inbox-10/call_1"):
        await journal.llm_response(turn, 1, LLMResponse("hi"), model=1)
    await journal.steer("inbox-1", 2, [{"row_id": 5, "text": "make it Tuesday"}])
    replay = await journal.load("inbox-1")
    assert replay.models == {1: 1} and replay.steered == {2: [{"row_id": 5,
                                                              "text": "make it Tuesday"}]}
    await journal.finish("inbox-1")
    assert sorted(t for t, _ in await journal.open_turns()) == ["inbox-10", "inbox-10/call_1"]
    await journal.close("inbox-10", "stopped")
    assert (await journal.load("inbox-10/call_1")).empty
    assert (await journal.load("inbox-10")).closed


async def test_a_message_joins_a_turn_once(db):
    inbox = InboxStore(db)
    row = await inbox.record(IncomingMessage("test", "alice", "e1", "make it Tuesday", NOW))
    assert row is not None
    await inbox.mark_steered([row], "inbox-1", NOW)
    await inbox.mark_steered([row], "inbox-2", NOW)  # a redo: already closed, stays so
    stored = await db.fetchrow("SELECT status, steered_into FROM inbox WHERE id = $1", row)
    assert (stored["status"], stored["steered_into"]) == ("steered", "inbox-1")


async def test_traces_keep_each_persons_latest(db):
    await UserStore(db).ensure("u1", at=NOW)
    traces = TraceStore(db, kept_per_person=2)
    for n in range(3):
        await traces.write(TurnTrace(f"t{n}", "u1", "sms", NOW.isoformat(), f"said {n}",
                                     "final_answer"), NOW)
    assert [t.turn_id for t in await traces.recent("u1")] == ["t2", "t1"]
    assert (await traces.last("u1")).said == "said 2"
    assert await traces.get("t0") is None


async def test_summaries_are_versioned_and_history_is_read_by_seq(db):
    await UserStore(db).ensure("u1", at=NOW)
    history = HistoryStore(db)
    for i in range(5):
        await history.append("u1", f"t{i}", [{"role": "user", "content": f"m{i}"}],
                             channel="sms", at=NOW)
    numbered = await history.load_numbered("u1")
    seqs = [seq for seq, _ in numbered]
    assert [m["content"] for _, m in await history.load_oldest("u1", seqs[1], 2)] == ["m2",
                                                                                     "m3"]
    assert await history.count("u1", seqs[2]) == 2
    assert [m["content"] for m in await history.load("u1", after_seq=seqs[3])] == ["m4"]
    summaries = SummaryStore(db)
    assert await summaries.add(Summary("u1", 1, seqs[1], "first"), NOW)
    assert not await summaries.add(Summary("u1", 1, seqs[2], "a race"), NOW)
    assert await summaries.add(Summary("u1", 2, seqs[3], "second"), NOW)
    latest = await summaries.latest("u1")
    assert (latest.version, latest.through_seq, latest.text) == (2, seqs[3], "second")
