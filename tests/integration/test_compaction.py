"""Compaction with a memory flush: messages about to leave the request view are first read by
memory extraction, then folded into a stored, versioned running summary that the view carries
ahead of the recent messages. The raw history is never changed."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

from bot.config.sections import MemorySettings
from bot.contracts.envelopes import Inbound
from bot.loop.context import SUMMARY_HEADER
from bot.memory.compaction import PROMPT as SUMMARY_PROMPT
from bot.memory.extract import PROMPT as EXTRACTION_PROMPT
from tests.fakes.fake_openai import Reply
from tests.helpers import said, told

NOW = datetime(2026, 1, 5, 9, tzinfo=UTC)
FACT = "By the way, my locker code is 4812."


class Endpoint:
    """The fake endpoint as a faithful model would answer: the extractor finds the locker
    code, the summariser keeps the lines that matter, the conversation says "Noted." """

    def __init__(self, fake) -> None:  # type: ignore[no-untyped-def]
        self.chats: list[list[dict]] = []
        self.summaries = 0
        self.extractions = 0
        fake.responder = self.respond

    def respond(self, body):  # type: ignore[no-untyped-def]
        messages = body["messages"]
        system = messages[0]["content"]
        if system == EXTRACTION_PROMPT:
            self.extractions += 1
            said = messages[1]["content"].split("PERSON_SAID:")[1]
            facts = [{"text": "Locker code is 4812", "kind": "fact"}] if "4812" in said else []
            return Reply(content=json.dumps({"facts": facts}))
        if system.startswith(SUMMARY_PROMPT.split("{")[0]):
            self.summaries += 1
            previous, new = messages[1]["content"].split("NEW_MESSAGES:\n")
            kept = [line for line in new.splitlines() if "locker" in line]
            old = previous.removeprefix("PREVIOUS_SUMMARY:\n").strip()
            return Reply(content="\n".join([*([] if old == "(none)" else [old]),
                                            *kept]) or "Small talk.")
        self.chats.append(messages)
        return Reply(content="Noted.")


def say(app, user: str, text: str):  # type: ignore[no-untyped-def]
    return app.orchestrator.handle_message(Inbound(user_id=user, channel="console", text=text,
                                                   received_at=NOW))


async def seed(app, user: str, pairs: int) -> list[dict]:  # type: ignore[no-untyped-def,type-arg]
    """A long conversation: `pairs` exchanges; the person's second message (message 3)
    tells the locker code."""
    written = []
    for i in range(pairs):
        said = FACT if i == 1 else f"message {2 * i + 1}: chatting about topic {i}"
        turn = [{"role": "user", "content": said},
                {"role": "assistant", "content": f"Sure, topic {i}."}]
        await app.history.append(user, f"old-{i}", turn, channel="console", at=NOW)
        written += turn
    return written


async def test_a_fact_from_message_3_of_400_still_reaches_the_request_that_needs_it(
        app_factory, fake_llm):
    app = await app_factory(loop={"context_token_limit": 3000, "llm_retry_base_delay": 0.01},
                            memory=MemorySettings())
    me = (await app.ensure_owner()).id
    endpoint = Endpoint(fake_llm)
    written = await seed(app, me, 200)
    assert len(written) == 400 and written[2]["content"] == FACT

    await say(app, me, "what is the plan for today?")
    await app.compactor.drain()
    await app.memory.extractor.drain()

    summary = await app.orchestrator.deps.summaries.latest(me)
    assert summary is not None and summary.version >= 2  # folded in chunks, each a version
    assert "4812" in summary.text
    assert endpoint.summaries == summary.version and endpoint.extractions >= 1
    facts = [f.text for f in await app.memory.service.store.open_facts(me)]
    assert "Locker code is 4812" in facts  # the memory flush kept it as a fact too
    # The raw history is never changed.
    stored = await app.history.load(me, 1000)
    assert len(stored) == 402 and stored[:400] == written

    await say(app, me, "what's my locker code?")
    request = endpoint.chats[-1]
    system = told(request)  # the summary in the system prompt, recalled facts in the note
    assert SUMMARY_HEADER in system and "4812" in system[system.index(SUMMARY_HEADER):]
    assert not any(FACT == m.get("content") for m in request)  # not the raw message...
    assert len(request) <= 45  # ...nor the 400 messages: the summary stands for them
    assert request[1]["role"] == "user"  # the kept messages start at the person's
    assert request[-1]["role"] == "user" and said(request[-1]["content"]) == \
        "what's my locker code?"
    # Summarised once: the next turn found nothing new due.
    assert (await app.orchestrator.deps.summaries.latest(me)).version == summary.version


async def test_a_short_conversation_is_never_summarised(app_factory, fake_llm):
    app = await app_factory()
    me = (await app.ensure_owner()).id
    endpoint = Endpoint(fake_llm)
    await seed(app, me, 5)
    await say(app, me, "and now?")
    await app.compactor.drain()
    assert endpoint.summaries == 0 and fake_llm.calls == 1
    assert await app.orchestrator.deps.summaries.latest(me) is None
    assert re.search(SUMMARY_HEADER[:20], endpoint.chats[0][0]["content"]) is None
