"""Approvals on WhatsApp: a card as quick-reply buttons (the Content API's twilio/quick-reply,
found or created once), the press read from the webhook's ButtonPayload and bound to its card;
typed answers as the fallback. Each action runs once."""

from __future__ import annotations

import asyncio
import json

import pytest

from bot.contracts.approvals import ApprovalStatus
from tests.fakes import risky_tools
from tests.fakes.fake_openai import Reply as LLMReply
from tests.fakes.fake_openai import ToolCall
from tests.fakes.fake_twilio import SentMessage
from tests.integration.test_approvals import registry_file
from tests.integration.whatsapp_harness import whatsapp_world

EMAIL = {"to": "team@corp.example", "subject": "Q3", "body": "Numbers attached."}
FLIGHT = {"origin": "LHR", "destination": "JFK", "date": "2026-03-03"}


@pytest.fixture(autouse=True)
def _clean():
    risky_tools.SENT.clear()
    risky_tools.BOOKED.clear()


@pytest.fixture
async def world(app_factory, tmp_path):
    world, close = await whatsapp_world(app_factory, agents=registry_file(tmp_path))
    yield world
    await close()


async def ask(world, fake_llm, *calls: ToolCall) -> list[SentMessage]:
    """The person asks; the cards Valet sent (quick-reply content messages)."""
    before = len(world.sent_to())
    fake_llm.script(LLMReply(tool_calls=list(calls)))
    await world.write("please take care of it")
    await world.idle()
    return [m for m in world.sent_to()[before:] if m.content_sid]


def button(card: SentMessage, which: str) -> tuple[str, str]:
    """The press of a card's button: its payload (the id Valet gave it) and its title."""
    variables = json.loads(card.content_variables or "{}")
    return (variables["2"], "✅ Yes") if which == "yes" else (variables["3"], "✖️ Cancel")


async def test_a_card_is_quick_reply_buttons_and_yes_runs_the_action_once(world, fake_llm):
    [card] = await ask(world, fake_llm, ToolCall("send_email", EMAIL))
    content = world.twilio.whatsapp.contents[card.content_sid]
    [(kind, shape)] = content["types"].items()
    assert kind == "twilio/quick-reply"
    assert [a["title"] for a in shape["actions"]] == ["✅ Yes", "✖️ Cancel"]
    assert card.body.startswith("Send email (to: team@corp.example")
    assert risky_tools.SENT == []
    fake_llm.script(LLMReply(content="Sent to the team."))
    await world.write("✅ Yes", button=button(card, "yes"))
    await world.write("✅ Yes", button=button(card, "yes"))  # pressed twice
    await world.idle()
    assert [e["to"] for e in risky_tools.SENT] == ["team@corp.example"]
    assert "Sent to the team." in world.got()


async def test_the_card_content_is_created_once_and_found_again(world, fake_llm):
    await ask(world, fake_llm, ToolCall("send_email", EMAIL))
    await ask(world, fake_llm, ToolCall("book_flight", FLIGHT))
    cards = [c for c in world.twilio.whatsapp.contents.values()
             if c["friendly_name"].startswith("valet_card_")]
    assert len(cards) == 1
    assert {m.content_sid for m in world.twilio.sent if m.content_sid} == {cards[0]["sid"]}
    # Another process (or the next start) finds it by its name: none is made again, even
    # when several deliveries ask at once.
    from channels.whatsapp.cards import QuickReplies

    again = QuickReplies(world.channel.sender.client, world.channel.sender.words)
    found = await asyncio.gather(*(again.sid() for _ in range(3)))
    assert found == [cards[0]["sid"]] * 3
    assert len(world.twilio.whatsapp.contents) == 1


async def test_a_press_of_an_old_card_never_decides_another(world, fake_llm):
    [first] = await ask(world, fake_llm, ToolCall("send_email", EMAIL))
    fake_llm.script(LLMReply(content="Okay, not sent."))
    await world.write("✖️ Cancel", button=button(first, "no"))
    await world.idle()
    [second] = await ask(world, fake_llm, ToolCall("book_flight", FLIGHT))
    fake_llm.script(LLMReply(content="Nothing to do."))
    await world.write("✅ Yes", button=button(first, "yes"))  # the old card's YES
    await world.idle()
    assert risky_tools.SENT == [] and risky_tools.BOOKED == []
    approvals = await world.app.approvals.store.list(None, None)
    by_tool = {a.tool_name: a.status for a in approvals}
    assert by_tool == {"send_email": ApprovalStatus.REJECTED,
                       "book_flight": ApprovalStatus.PENDING}
    fake_llm.script(LLMReply(content="Booked."))
    await world.write("✅ Yes", button=button(second, "yes"))
    await world.idle()
    assert len(risky_tools.BOOKED) == 1 and risky_tools.SENT == []


async def test_a_typed_yes_answers_the_card_too(world, fake_llm):
    await ask(world, fake_llm, ToolCall("send_email", EMAIL))
    fake_llm.script(LLMReply(content="Sent."))
    await world.write("yes")
    await world.idle()
    assert [e["to"] for e in risky_tools.SENT] == ["team@corp.example"]


async def test_without_the_content_api_the_card_goes_in_words(app_factory, tmp_path, fake_llm):
    from tests.fakes.fake_twilio import FakeTwilio
    from tests.integration.whatsapp_harness import ACCOUNT_SID, AUTH_TOKEN

    twilio = await FakeTwilio(ACCOUNT_SID, AUTH_TOKEN).__aenter__()
    twilio.whatsapp.content_down = True
    world, close = await whatsapp_world(app_factory, agents=registry_file(tmp_path),
                                        twilio=twilio)
    try:
        cards = await ask(world, fake_llm, ToolCall("send_email", EMAIL))
        assert cards == []
        said = world.got()[-1]
        assert said.endswith("Answer yes or no, or tell me what to change.")
        fake_llm.script(LLMReply(content="Sent."))
        await world.write("yes")
        await world.idle()
        assert len(risky_tools.SENT) == 1
    finally:
        await close()


async def test_a_persona_rewords_the_buttons_of_the_cards_served(app_factory, tmp_path, fake_llm):
    """The persona's `lines:` reach the running channel (load_persona's channel groups, the
    host's words): the card content's buttons carry them."""
    persona = tmp_path / "p.yaml"
    persona.write_text("name: P\nsystem_prompt: You help.\n"
                       "lines:\n  whatsapp_button_approve: 'Go ahead'\n", encoding="utf-8")
    world, close = await whatsapp_world(app_factory, agents=registry_file(tmp_path),
                                        persona=str(persona))
    try:
        [card] = await ask(world, fake_llm, ToolCall("send_email", EMAIL))
        content = next(c for c in world.twilio.whatsapp.contents.values()
                       if c["sid"] == card.content_sid)
        titles = [a["title"] for a in content["types"]["twilio/quick-reply"]["actions"]]
        assert titles == ["Go ahead", "✖️ Cancel"]
    finally:
        await close()
