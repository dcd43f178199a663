"""Long-term memory through the whole app, with the fake LLM's chat and embeddings
endpoints: what a person said is recalled later (after a restart, on their other channel),
never for anyone else; a move replaces the old city; the person stays in control."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime

import pytest

from bot.config.policies import AccessSettings, ChannelAccess
from bot.config.sections import MemorySettings
from bot.contracts.clock import FakeClock
from bot.memory.extract import PROMPT
from bot.memory.queue import FIRST_RETRY
from tests.fakes.fake_openai import Reply as LLMReply
from tests.fakes.fake_openai import ToolCall
from tests.helpers import RecordingSender, incoming, told

NINE_AM = datetime(2026, 1, 5, 9, tzinfo=UTC)
MEMORY_HEADER = "What you remember about the user"


class ScriptedLLM:
    """Routes the fake endpoint's calls: extraction calls get `facts` (a function of the
    request's text), conversation calls get `say` (a function of the last message)."""

    def __init__(self, fake) -> None:  # type: ignore[no-untyped-def]
        self.fake = fake
        self.extractions: list[str] = []  # the extractor's request texts
        self.chats: list[list[dict]] = []  # the conversation requests' messages
        self.facts = lambda text: []
        self.say = lambda last: "Noted."
        self.extraction_gate: asyncio.Event | None = None
        self.extraction_started = asyncio.Event()
        fake.responder = self.respond

    async def respond(self, body):  # type: ignore[no-untyped-def]
        messages = body["messages"]
        if messages[0]["content"] == PROMPT:
            text = messages[1]["content"]
            self.extractions.append(text)
            self.extraction_started.set()
            if self.extraction_gate is not None:
                await self.extraction_gate.wait()
            return LLMReply(content=json.dumps({"facts": self.facts(text)}))
        self.chats.append(messages)
        answer = self.say(messages[-1])
        return answer if isinstance(answer, LLMReply) else LLMReply(content=answer)

    def memory_line(self, request: int = -1) -> str:
        # Recalled memory is this turn's: in the note after the person's newest words.
        newest = next(m["content"] for m in reversed(self.chats[request])
                      if m["role"] == "user")
        return newest[newest.find(MEMORY_HEADER):] if MEMORY_HEADER in newest else ""


def known_id(extraction_text: str, words: str) -> int:
    """The id the extractor was shown for a known fact holding `words`."""
    for line in extraction_text.split("PERSON_SAID")[0].splitlines():
        if words in line and ":" in line:
            return int(line.split(":", 1)[0])
    raise AssertionError(f"{words!r} not among the known facts:\n{extraction_text}")


@pytest.fixture
async def memory_app(db_url, app_factory):
    """Alice on `test` (linked on `sms`) and Bob on `test`; memory on."""

    async def make(clock: FakeClock | None = None, **memory):  # type: ignore[no-untyped-def]
        access = AccessSettings(channels={"test": ChannelAccess(policy="allowlist",
                                                                allow=["alice", "bob"])})
        app = await app_factory(database_url=db_url, access=access,
                                clock=clock or FakeClock(NINE_AM),
                                memory=MemorySettings(**memory))
        senders = {name: RecordingSender(name) for name in ("test", "sms")}
        for sender in senders.values():
            app.add_channel(sender)
        await app.start()
        return app, senders

    return make


async def _admit(app, address: str):  # type: ignore[no-untyped-def]
    admitted = await app.access.admit("test", address, address.title(), "hi", app.clock.now())
    return admitted.user


async def say(app, text: str, *, address: str = "alice", channel: str = "test") -> None:
    await app.gateway.receive(incoming(text, channel=channel, address=address))
    await asyncio.wait_for(app.gateway.wait_idle(), 60)
    await asyncio.wait_for(app.memory.extractor.drain(), 10)


async def test_a_fact_is_recalled_after_a_restart_and_on_the_linked_channel_never_for_bob(
        memory_app, fake_llm):
    llm = ScriptedLLM(fake_llm)
    llm.facts = lambda text: [{"text": "Daughter Mia is 7", "kind": "person"}] \
        if "Mia" in text.split("PERSON_SAID")[1] else []
    app, _ = await memory_app()
    alice = await _admit(app, "alice")
    await _admit(app, "bob")
    await app.identities.link("sms", "+15550001111", alice.id, at=app.clock.now())
    await say(app, "My daughter is Mia, she's 7")
    assert llm.memory_line() == ""  # nothing known yet
    await app.close()

    app, senders = await memory_app()  # a restart
    await say(app, "What should I get Mia for her birthday?")
    assert "- Daughter Mia is 7 (person" in llm.memory_line()
    await say(app, "Any party ideas for Mia?", channel="sms", address="+15550001111")
    assert "Daughter Mia is 7" in llm.memory_line()
    assert senders["sms"].texts("+15550001111") == ["Noted."]
    await say(app, "Any party ideas for Mia?", address="bob")
    assert MEMORY_HEADER not in told(llm.chats[-1])  # Bob's turn knows nothing
    # The recalled facts were for the request only: the stored history never holds them.
    for message in await app.history.load(alice.id):
        assert MEMORY_HEADER not in (message.get("content") or "")


async def test_moving_to_lisbon_closes_porto_and_recall_shows_lisbon_only(
        memory_app, fake_llm):
    llm = ScriptedLLM(fake_llm)

    def facts(text: str) -> list[dict]:
        said = text.split("PERSON_SAID")[1]
        if "Porto" in said:
            return [{"text": "Lives in Porto", "kind": "fact"}]
        if "Lisbon" in said:
            return [{"text": "Lives in Lisbon", "kind": "fact",
                     "replaces": [known_id(text, "Lives in Porto")]}]
        return []

    llm.facts = facts
    app, _ = await memory_app()
    alice = await _admit(app, "alice")
    await say(app, "I live in Porto, by the river")
    await say(app, "Actually I moved to Lisbon last week")
    await say(app, "Where should I go for dinner near where I live?")
    line = llm.memory_line()
    assert "Lives in Lisbon" in line and "Porto" not in line
    history = await app.memory.service.store.history(alice.id)
    assert [(f.text, f.closed_reason) for f in history] == [
        ("Lives in Porto", "replaced"), ("Lives in Lisbon", None)]


async def test_with_the_embeddings_endpoint_down_recall_uses_keywords_and_the_turn_is_answered(
        memory_app, fake_llm):
    llm = ScriptedLLM(fake_llm)
    llm.facts = lambda text: [{"text": "Allergic to peanuts", "kind": "fact"}] \
        if "peanuts" in text.split("PERSON_SAID")[1] else []
    app, senders = await memory_app(embedding_model="fake-embed")
    await _admit(app, "alice")
    await say(app, "I'm allergic to peanuts, badly")
    assert fake_llm.embedding_requests  # embedded while the endpoint was up
    fake_llm.embeddings_down = 503
    llm.say = lambda last: "Try the satay-free menu."
    await say(app, "Can I eat the peanuts sauce at the Thai place?")
    assert senders["test"].texts("alice")[-1] == "Try the satay-free menu."
    assert "Allergic to peanuts" in llm.memory_line()
    # Learnt while the endpoint is down: stored now, embedded by a later pass.
    alice = await app.identities.resolve("test", "alice")
    sesame = await app.memory.service.learn(alice.id, "Allergic to sesame")
    store = app.memory.service.store
    assert sesame.id not in {i for i, _ in await store.embeddings(alice.id, "fake-embed")}
    fake_llm.embeddings_down = None
    app.clock.advance(minutes=2)  # the embedder rests a minute after a failure
    await app.memory.one_pass()
    assert sesame.id in {i for i, _ in await store.embeddings(alice.id, "fake-embed")}


async def test_embeddings_find_a_fact_that_shares_no_word_with_the_message(
        memory_app, fake_llm):
    llm = ScriptedLLM(fake_llm)
    llm.facts = lambda text: [{"text": "Vegetarian since 2019", "kind": "preference"}] \
        if "meat" in text.split("PERSON_SAID")[1] else []
    # The fake's vectors put "vegetarian" and "dinner" on the same axis: similar meaning.
    topic = {"vegetarian": 0, "dinner": 0, "restaurant": 0}
    fake_llm.vector_for = lambda text: [
        1.0 if any(topic.get(w.strip("?.,!").lower()) == i for w in text.split()) else 0.01
        for i in range(8)]
    app, _ = await memory_app(embedding_model="fake-embed", recall_budget_tokens=50)
    alice = await _admit(app, "alice")
    for n in range(30):  # recent facts that would fill the small budget on recency alone
        await app.memory.service.learn(alice.id, f"Note number {n}")
    await say(app, "I don't eat meat, haven't since 2019")
    await say(app, "Book a restaurant for dinner tonight")
    line = llm.memory_line()
    assert "Vegetarian since 2019" in line and "Note number 29" not in line


async def test_extraction_runs_after_the_reply_is_sent(memory_app, fake_llm):
    llm = ScriptedLLM(fake_llm)
    llm.extraction_gate = asyncio.Event()  # the extraction call hangs until released
    llm.facts = lambda text: [{"text": "Works night shifts", "kind": "fact"}]
    app, senders = await memory_app()
    alice = await _admit(app, "alice")
    await app.gateway.receive(incoming("I work night shifts at the hospital"))
    await asyncio.wait_for(app.gateway.wait_idle(), 60)  # would hang if the reply waited
    assert senders["test"].texts("alice") == ["Noted."]
    await asyncio.wait_for(llm.extraction_started.wait(), 10)  # extraction started...
    assert await app.memory.service.store.open_facts(alice.id) == []  # ...not finished
    llm.extraction_gate.set()
    await asyncio.wait_for(app.memory.extractor.drain(), 10)
    assert [f.text for f in await app.memory.service.store.open_facts(alice.id)] == \
        ["Works night shifts"]


async def test_a_failed_extraction_is_retried_later_and_never_shown(memory_app, fake_llm):
    llm = ScriptedLLM(fake_llm)
    app, senders = await memory_app()
    alice = await _admit(app, "alice")
    llm.facts = lambda text: (_ for _ in ()).throw(RuntimeError("boom"))  # a 500
    await say(app, "My partner is called Sam")
    assert senders["test"].texts("alice") == ["Noted."]  # nothing about the failure
    assert await app.memory.extractor.queue.pending(alice.id) == 1
    llm.facts = lambda text: [{"text": "Partner is Sam", "kind": "person"}]
    assert await app.memory.extractor.retry_due() == 0  # not due yet
    app.clock.advance(seconds=2 * FIRST_RETRY.total_seconds())
    assert await app.memory.extractor.retry_due() == 1
    assert [f.text for f in await app.memory.service.store.open_facts(alice.id)] == \
        ["Partner is Sam"]
    assert await app.memory.extractor.queue.pending(alice.id) == 0


async def test_nothing_is_extracted_from_greetings_commands_or_tool_results(
        memory_app, fake_llm):
    llm = ScriptedLLM(fake_llm)
    app, _ = await memory_app()
    await _admit(app, "alice")
    await say(app, "Hi!")
    await say(app, "thanks :)")
    await say(app, "/memory")
    assert llm.extractions == []
    # A web page's words reach the loop as a tool result, never the extractor.
    llm.say = lambda last: LLMReply(tool_calls=[ToolCall("calculator", {"expression": "2+2"})]) \
        if last["role"] == "user" else "The page says the author lives in Oslo."
    await say(app, "Summarise example.com for me")
    [request] = llm.extractions
    said = request.split("PERSON_SAID:")[1].split("ASSISTANT_ANSWER")[0]
    assert said.strip() == "Summarise example.com for me"
    assert "not the person's words" in request


async def test_memory_and_forget_commands_work_without_the_llm(memory_app, fake_llm):
    llm = ScriptedLLM(fake_llm)
    app, senders = await memory_app()
    alice = await _admit(app, "alice")
    service = app.memory.service
    porto = await service.learn(alice.id, "Lives in Porto")
    await service.learn(alice.id, "Prefers tea to coffee")
    calls = fake_llm.calls
    await say(app, "/memory")
    assert senders["test"].texts("alice")[-1] == (
        f"What I remember about you:\n#{porto.id + 1} Prefers tea to coffee (fact)\n"
        f"#{porto.id} Lives in Porto (fact)")
    await say(app, f"/forget {porto.id}")
    assert senders["test"].texts("alice")[-1] == "Forgotten:\n- Lives in Porto"
    await say(app, "/forget coffee")
    assert senders["test"].texts("alice")[-1] == "Forgotten:\n- Prefers tea to coffee"
    await say(app, "/memory")
    assert senders["test"].texts("alice")[-1] == "I don't remember anything about you yet."
    assert fake_llm.calls == calls and llm.chats == []


async def test_remember_and_forget_by_asking_and_forget_everything_asks_first(
        memory_app, fake_llm):
    llm = ScriptedLLM(fake_llm)
    app, _ = await memory_app()
    alice = await _admit(app, "alice")
    replies = iter([
        LLMReply(tool_calls=[ToolCall("remember", {"fact": "Sister is Ana", "kind": "person"})]),
        "I'll remember that.",
        LLMReply(tool_calls=[ToolCall("remember", {"fact": "Dog is Rex", "kind": "person"})]),
        "Noted.",
        LLMReply(tool_calls=[ToolCall("recall_memories", {})]),
        "You have a sister, Ana, and a dog, Rex.",
        LLMReply(tool_calls=[ToolCall("forget", {"about": "sister Ana"})]),
        "Forgotten.",
        LLMReply(tool_calls=[ToolCall("forget_everything", {})]),
        "Done.",
    ])
    llm.say = lambda last: next(replies)
    await say(app, "Remember that my sister is Ana")
    assert [f.text for f in await app.memory.service.store.open_facts(alice.id)] == \
        ["Sister is Ana"]
    assert llm.extractions == []  # already remembered by the tool: nothing to extract
    await say(app, "And remember my dog is Rex")
    await say(app, "What do you know about me?")
    listing = llm.chats[-1][-1]["content"]  # the tool result the LLM answered from
    assert "Dog is Rex (person)" in listing and "Sister is Ana (person)" in listing
    await say(app, "Forget that I have a sister called Ana")
    # Forgetting is for good: asked first (issue 43), the card naming the fact by its id.
    assert len(await app.memory.service.store.open_facts(alice.id)) == 2
    pending = await app.approvals.list_pending_approvals(alice.id)
    assert [p.tool_name for p in pending] == ["forget"]
    assert "Sister is Ana" in pending[0].summary and "Dog" not in pending[0].summary
    await say(app, "yes")
    assert [f.text for f in await app.memory.service.store.open_facts(alice.id)] == \
        ["Dog is Rex"]
    assert llm.chats[-1][-1]["content"] == "Forgotten:\n- Sister is Ana"  # the tool result
    await say(app, "Forget everything you know about me")
    assert len(await app.memory.service.store.open_facts(alice.id)) == 1  # not yet: asked
    pending = await app.approvals.list_pending_approvals(alice.id)
    assert [p.tool_name for p in pending] == ["forget_everything"]
    await say(app, "yes")
    assert await app.memory.service.store.open_facts(alice.id) == []
