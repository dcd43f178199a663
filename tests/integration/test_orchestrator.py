"""handle_message end to end on a real SQLite file, the real openai client and the fake LLM."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.contracts.envelopes import Inbound, LoopEvent, Reply
from tests.fakes.fake_openai import Fail, ToolCall
from tests.fakes.fake_openai import Reply as LLMReply
from tests.helpers import assert_closed, said, told


def inbound(user: str, text: str) -> Inbound:
    return Inbound(user_id=user, channel="console", text=text,
                   received_at=datetime(2026, 1, 5, 9, tzinfo=UTC))


async def test_a_turn_is_written_once_and_the_next_turn_sees_it(app_factory, fake_llm):
    app = await app_factory()
    owner = await app.ensure_owner()
    fake_llm.script(
        LLMReply(tool_calls=[ToolCall("calculate", {"expression": "6*7"}),
                             ToolCall("current_time", {"timezone": "Asia/Tokyo"})]),
        LLMReply(content="42, and it is evening in Tokyo."),
        LLMReply(content="You asked about 6*7."))
    reply = await app.orchestrator.handle_message(inbound(owner.id, "6*7 and Tokyo time?"))
    assert reply.text == "42, and it is evening in Tokyo."
    stored = await app.history.load(owner.id)
    assert [m["role"] for m in stored] == ["user", "assistant", "tool", "tool", "assistant"]
    assert "42" in stored[2]["content"]
    assert_closed(stored)
    await app.orchestrator.handle_message(inbound(owner.id, "what did I ask?"))
    second = fake_llm.requests[2]["messages"]
    assert second[0]["role"] == "system"
    assert [m["role"] for m in second[1:]] == ["user", "assistant", "tool", "tool", "assistant",
                                                "user"]
    assert await app.history.count(owner.id) == 7


async def test_llm_down_gives_the_persona_apology_and_keeps_the_message(app_factory, fake_llm):
    app = await app_factory(loop={"llm_max_retries": 1, "llm_retry_base_delay": 0.01})
    owner = await app.ensure_owner()
    fake_llm.script(Fail(500), Fail(500))
    reply = await app.orchestrator.handle_message(inbound(owner.id, "remember the milk"))
    assert reply.text == app.persona.lines.llm_unavailable
    assert reply.stop.value == "llm_error"
    fake_llm.script(LLMReply(content="Back now. Milk, noted."))
    await app.orchestrator.handle_message(inbound(owner.id, "are you there?"))
    contents = [said(m["content"]) for m in fake_llm.requests[-1]["messages"]]
    assert "remember the milk" in contents and "are you there?" in contents


async def test_histories_are_per_user(app_factory, fake_llm):
    app = await app_factory()
    now = datetime(2026, 1, 5, tzinfo=UTC)
    await app.users.ensure("alice", timezone="Europe/Paris", at=now)
    await app.users.ensure("bob", timezone="America/Chicago", at=now)
    fake_llm.script(LLMReply(content="hi alice"), LLMReply(content="hi bob"))
    await app.orchestrator.handle_message(inbound("alice", "my secret is 1234"))
    await app.orchestrator.handle_message(inbound("bob", "hello"))
    bob_request = fake_llm.requests[1]["messages"]
    assert not any("1234" in (m["content"] or "") for m in bob_request)
    # Each person's time zone is in their turn's note, after their newest words.
    assert "America/Chicago" in bob_request[-1]["content"]
    assert "Europe/Paris" in fake_llm.requests[0]["messages"][-1]["content"]


async def test_the_system_prompt_has_time_zone_and_capabilities(app_factory, fake_llm):
    app = await app_factory(persona="jeeves")
    now = datetime(2026, 1, 5, tzinfo=UTC)
    await app.users.ensure("kim", timezone="Asia/Kolkata", at=now)
    fake_llm.script(LLMReply(content="Very good."))
    await app.orchestrator.handle_message(inbound("kim", "hello"))
    system = fake_llm.requests[0]["messages"][0]["content"]
    assert system.startswith("You are Jeeves")
    assert "calculate" in system and "web_fetch" in system
    # The time changes every minute: it is in the turn's note, after the person's words.
    note = fake_llm.requests[0]["messages"][-1]["content"]
    assert "14:30" in note and "Asia/Kolkata" in note and "UTC+05:30" in note
    assert "14:30" not in system


async def test_rate_limit_answers_without_calling_the_llm(app_factory, fake_llm):
    app = await app_factory(rate_limit_per_minute=2)
    guest = await app.users.ensure("guest", at=datetime(2026, 1, 5, tzinfo=UTC))
    fake_llm.responder = lambda req: LLMReply(content="ok")
    replies = [await app.orchestrator.handle_message(inbound(guest.id, f"m{i}"))
               for i in range(3)]
    assert [r.stop.value for r in replies] == ["final_answer", "final_answer", "rate_limited"]
    assert fake_llm.calls == 2


async def test_the_owner_is_not_rate_limited(app_factory, fake_llm):
    """The limit protects Valet from other people, not from its owner."""
    app = await app_factory(rate_limit_per_minute=2)
    owner = await app.ensure_owner()
    fake_llm.responder = lambda req: LLMReply(content="ok")
    replies = [await app.orchestrator.handle_message(inbound(owner.id, f"m{i}"))
               for i in range(5)]
    assert [r.stop.value for r in replies] == ["final_answer"] * 5


async def test_stream_message_yields_progress_then_the_reply(app_factory, fake_llm):
    app = await app_factory()
    owner = await app.ensure_owner()
    fake_llm.script(LLMReply(tool_calls=[ToolCall("calculate", {"expression": "2+2"})]),
                    LLMReply(content="4"))
    items = [i async for i in app.orchestrator.stream_message(inbound(owner.id, "2+2?"))]
    assert isinstance(items[-1], Reply) and items[-1].text == "4"
    names = [i.type.value for i in items if isinstance(i, LoopEvent)]
    assert "tool_call_start" in names and names[-1] == "execution_end"


async def test_the_user_changes_their_timezone_by_saying_so(app_factory, fake_llm):
    app = await app_factory()
    owner = await app.ensure_owner()
    fake_llm.script(
        LLMReply(tool_calls=[ToolCall("set_my_timezone", {"timezone": "europe/lisbon"}),
                             ToolCall("set_quiet_hours", {"start": "22:00", "end": "7:00"})]),
        LLMReply(content="Done: Lisbon time, quiet 22:00-07:00."),
        LLMReply(content="ok"))
    await app.orchestrator.handle_message(inbound(owner.id, "I moved to Lisbon; no pings at night"))
    user = await app.users.get(owner.id)
    assert user.timezone == "Europe/Lisbon"
    assert (user.quiet_hours_start, user.quiet_hours_end) == ("22:00", "07:00")
    await app.orchestrator.handle_message(inbound(owner.id, "thanks"))
    assert "Europe/Lisbon" in told(fake_llm.requests[-1]["messages"])


async def test_a_guessed_timezone_with_several_candidates_is_asked_about_once(app_factory,
                                                                             fake_llm):
    app = await app_factory()
    now = datetime(2026, 1, 5, tzinfo=UTC)
    await app.users.ensure("idaho", timezone="America/Boise", at=now,
                           timezone_candidates=("America/Boise", "America/Los_Angeles"))
    fake_llm.responder = lambda req: LLMReply(content="Hi! Which city are you in?")
    await app.orchestrator.handle_message(inbound("idaho", "hello"))
    await app.orchestrator.handle_message(inbound("idaho", "what's up"))
    systems = [told(r["messages"]) for r in fake_llm.requests]
    assert "could be in any of: America/Boise, America/Los_Angeles" in systems[0]
    assert "could be in any of" not in systems[1]  # asked once
    await app.users.set_timezone("idaho", "America/Los_Angeles")
    assert (await app.users.get("idaho")).timezone_candidates == ()
