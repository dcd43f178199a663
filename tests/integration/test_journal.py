"""The turn journal on both backends: what a turn did is durable as it happens, and a turn
redone after a crash continues from it instead of doing things twice."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from bot.contracts.approvals import ApprovalDraft
from bot.contracts.clock import FakeClock
from bot.contracts.envelopes import TurnStop
from bot.contracts.pause import PausedTask
from bot.contracts.tool_context import ToolExecutionContext
from bot.db import Database
from bot.llm.port import LLMResponse, TokenUsage
from bot.llm.port import ToolCall as LLMToolCall
from bot.loop.context import ContextManager
from bot.loop.journal import INTERRUPTED, TurnJournal
from bot.loop.react import react_loop
from bot.loop.state import LoopDeps
from bot.loop.types import ReactLoopResult
from bot.tools.registry import ToolOutcome, ToolRegistry, ToolStatus, tool
from tests.fakes.fake_openai import Hang, Reply, ToolCall
from tests.helpers import assert_closed, loop_config

TURN = "inbox-17"


class Errands:
    """A tool with a side effect (not safe to repeat) and a read-only one (safe), counting
    their runs; `hold` keeps both running until it is set (a crash comes meanwhile)."""

    def __init__(self) -> None:
        self.gifts: list[str] = []
        self.peeks: list[str] = []
        self.hold = asyncio.Event()
        self.hold.set()

    def registry(self) -> ToolRegistry:
        errands = self

        @tool
        async def send_gift(to: str) -> str:
            """Send a gift."""
            errands.gifts.append(to)
            await errands.hold.wait()
            return f"Gift sent to {to}."

        @tool(safe_to_repeat=True)
        async def peek_wishlist(who: str) -> str:
            """Read someone's wishlist."""
            errands.peeks.append(who)
            await errands.hold.wait()
            return f"{who} wants socks."

        return ToolRegistry([send_gift.__valet_tool__, peek_wishlist.__valet_tool__])


async def run_turn(llm: Any, db: Database, registry: ToolRegistry) -> ReactLoopResult:
    cfg = loop_config()
    clock = FakeClock()
    deps = LoopDeps(llm, registry, ContextManager(cfg), clock, journal=TurnJournal(db, clock))
    return await react_loop(
        deps, [{"role": "system", "content": "You are a test."}],
        [{"role": "user", "content": "get Ann a gift"}],
        ToolExecutionContext(user_id="u1", clock=clock), cfg, turn_id=TURN)


async def crash_once(task: asyncio.Task[Any], until: Any) -> None:
    """Let the turn run until `until()` holds, then kill it (as kill -9 would, mid-await)."""
    for _ in range(1000):
        if until():
            break
        await asyncio.sleep(0.01)
    assert until()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


def tool_results(request: dict[str, Any]) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


async def test_a_redone_turn_reuses_the_journalled_answer_and_result(db, fake_llm, llm):
    errands = Errands()
    fake_llm.script(Reply(tool_calls=[ToolCall("send_gift", {"to": "Ann"})]), Hang(60))
    first = asyncio.create_task(run_turn(llm, db, errands.registry()))
    await crash_once(first, lambda: fake_llm.calls == 2)  # the gift went; then the crash
    assert errands.gifts == ["Ann"]

    fake_llm.script(Reply(content="Ann's gift is on its way."))
    result = await run_turn(llm, db, errands.registry())
    assert result.response == "Ann's gift is on its way."
    assert errands.gifts == ["Ann"]  # not sent again
    assert fake_llm.calls == 3  # the first answer came from the journal, not from the LLM
    assert tool_results(fake_llm.requests[-1]) == ["Gift sent to Ann."]
    assert_closed(result.new_messages)


async def test_a_call_cut_short_is_interrupted_unless_safe_to_repeat(db, fake_llm, llm):
    errands = Errands()
    errands.hold.clear()  # both calls start, neither finishes before the crash
    fake_llm.script(Reply(tool_calls=[ToolCall("send_gift", {"to": "Ann"}),
                                      ToolCall("peek_wishlist", {"who": "Ann"})]))
    first = asyncio.create_task(run_turn(llm, db, errands.registry()))
    await crash_once(first, lambda: errands.gifts and errands.peeks)

    errands.hold.set()
    fake_llm.script(Reply(content="I read Ann's wishlist, but I can't tell if the gift went."))
    result = await run_turn(llm, db, errands.registry())
    assert result.stop_reason is TurnStop.FINAL_ANSWER
    assert errands.gifts == ["Ann"]  # the side effect is never repeated
    assert errands.peeks == ["Ann", "Ann"]  # the read-only call simply ran again
    assert tool_results(fake_llm.requests[-1]) == [INTERRUPTED, "Ann wants socks."]
    assert [r.result_status for r in result.tool_calls] == ["interrupted", "success"]
    assert fake_llm.calls == 2
    assert_closed(result.new_messages)


async def test_a_finished_turn_leaves_nothing_to_replay(db, fake_llm, llm):
    errands = Errands()
    journal = TurnJournal(db, FakeClock())
    fake_llm.script(Reply(tool_calls=[ToolCall("send_gift", {"to": "Ann"})]),
                    Reply(content="Sent."))
    await run_turn(llm, db, errands.registry())
    assert not (await journal.load(TURN)).empty
    await journal.finish(TURN)
    assert (await journal.load(TURN)).empty

    fake_llm.script(Reply(content="A new turn under the same id starts afresh."))
    result = await run_turn(llm, db, errands.registry())
    assert result.response == "A new turn under the same id starts afresh."


async def test_a_closed_turn_is_never_replayed(db, fake_llm, llm):
    errands = Errands()
    journal = TurnJournal(db, FakeClock())
    fake_llm.script(Reply(tool_calls=[ToolCall("send_gift", {"to": "Ann"})]), Hang(60))
    first = asyncio.create_task(run_turn(llm, db, errands.registry()))
    await crash_once(first, lambda: fake_llm.calls == 2)
    await journal.close(TURN, "stopped by the user")

    replay = await journal.load(TURN)
    assert replay.closed and replay.close_reason == "stopped by the user"
    assert not replay.responses and not replay.results
    result = await run_turn(llm, db, errands.registry())
    assert result.stop_reason is TurnStop.CANCELLED
    assert fake_llm.calls == 2 and errands.gifts == ["Ann"]


async def test_outcomes_and_their_pauses_round_trip(db):
    journal = TurnJournal(db, FakeClock())
    asked = datetime(2026, 1, 5, 9, 30, tzinfo=UTC)
    task = PausedTask(kind="agent", name="take_note", status="WAITING_FOR_INPUT",
                      question="What should the note say?", label="note", call_id="c1",
                      fields={"title": "Trip"}, state={"instruction": "pack"},
                      created_at=asked, asked_at=asked, expires_at=asked)
    draft = ApprovalDraft("delete_note", "c2", {"note_id": 4}, "Delete the note “Trip”",
                          {"note": "#4 Trip"}, allow_modification=False)
    outcomes = [
        ToolOutcome("c1", "take_note", ToolStatus.WAITING, "Asked the user.", 12,
                    pause=task, result_status="WAITING_FOR_INPUT"),
        ToolOutcome("c2", "delete_note", ToolStatus.WAITING, "Waiting for OK.", pause=draft),
        ToolOutcome("c3", "web_fetch", ToolStatus.SUCCESS, "…" * 10, 5, truncated_from=99),
    ]
    for outcome in outcomes:
        await journal.tool_result(TURN, 1, outcome)
    response = LLMResponse(None, [LLMToolCall("c1", "take_note", '{"title": "Trip"}')],
                           TokenUsage(10, 2), "tool_calls")
    await journal.llm_response(TURN, 1, response, level=2)

    replay = await journal.load(TURN)
    assert [replay.result(1, o.call_id) for o in outcomes] == outcomes
    assert replay.response(1) == (response, 2)
    assert replay.response(2) is None and replay.result(2, "c1") is None


async def test_the_first_record_of_a_step_stands(db):
    journal = TurnJournal(db, FakeClock())
    assert await journal.record(TURN, "plan", {"steps": ["a"]})
    assert not await journal.record(TURN, "plan", {"steps": ["b"]})
    assert await journal.recorded(TURN, "plan") == {"steps": ["a"]}
    assert await journal.recorded(TURN, "missing") is None
    assert await journal.recorded("inbox-18", "plan") is None
    assert (await journal.load(TURN)).record("plan") == {"steps": ["a"]}
