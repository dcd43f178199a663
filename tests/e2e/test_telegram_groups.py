"""Group members are people. With `telegram.groups` on, Valet answers in a group when
mentioned, and each member is a person of their own: their own pairing, approvals and history.
Letting one member in lets in no one else; only the member who asked (or the owner) decides
their request; the owner is the owner in a group too. Through the real python-telegram-bot and
the fake Bot API."""

from __future__ import annotations

from tests.e2e.telegram_harness import OWNER_CHAT, bot_messages, risky_registry
from tests.fakes import risky_tools
from tests.fakes.fake_openai import Reply, ToolCall

GROUP = -1001
ANA, BEN = 501, 502
SUPERGROUP = "supergroup"


async def started(start_telegram, tmp_path):
    risky_tools.SENT.clear()
    risky_registry(tmp_path)
    h = await start_telegram()
    h.service.inbound.settings.groups = True
    h.tg.user_says(OWNER_CHAT, "/whoami")  # the owner's chat is open to the bot
    await h.tg.wait_for(lambda: bot_messages(h.tg, OWNER_CHAT))
    return h


async def says_in_group(h, member: int, text: str, expect: int) -> None:
    h.tg.user_says(GROUP, f"@valet_test_bot {text}", sender=member, chat_type=SUPERGROUP)
    await h.tg.wait_for(lambda: len(bot_messages(h.tg, GROUP)) >= expect, timeout=30)
    await h.app.gateway.wait_idle()


async def let_in(h, member: int) -> None:
    """The owner approves the code of the member's own pairing notice."""
    who = f"(telegram {GROUP}:{member})"

    def notices() -> list[str]:
        return [t for t in bot_messages(h.tg, OWNER_CHAT) if who in t]

    await h.tg.wait_for(notices, timeout=30)
    code = notices()[-1].split("Reply PAIR ")[1].split()[0]
    h.tg.user_says(OWNER_CHAT, f"/pair approve {code}")
    await h.tg.wait_for(lambda: any(f"Approved {code}" in t
                                    for t in bot_messages(h.tg, OWNER_CHAT)), timeout=30)
    await h.app.gateway.wait_idle()


async def test_letting_one_member_in_lets_in_no_one_else(start_telegram, fake_llm, tmp_path):
    h = await started(start_telegram, tmp_path)
    await says_in_group(h, ANA, "hello", expect=1)
    assert "approve code" in bot_messages(h.tg, GROUP)[-1]  # Ana is a stranger: pairing
    await let_in(h, ANA)
    assert await h.app.identities.resolve("telegram", f"{GROUP}:{ANA}") is not None
    await h.tg.wait_for(lambda: len(bot_messages(h.tg, GROUP)) == 2)  # "You're in!"
    fake_llm.script(Reply(content="Hi Ana!"))
    await says_in_group(h, ANA, "hello again", expect=3)
    assert bot_messages(h.tg, GROUP)[-1] == "Hi Ana!"
    # Ben is in the same group, and still a stranger: his own pairing, no LLM call.
    calls = fake_llm.calls
    await says_in_group(h, BEN, "me too?", expect=4)
    assert "approve code" in bot_messages(h.tg, GROUP)[-1]
    assert await h.app.identities.resolve("telegram", f"{GROUP}:{BEN}") is None
    assert fake_llm.calls == calls


async def test_only_the_member_who_asked_decides_their_request(start_telegram, fake_llm,
                                                                tmp_path):
    h = await started(start_telegram, tmp_path)
    await says_in_group(h, ANA, "hello", expect=1)
    await let_in(h, ANA)
    # The owner hears of new requests at most once per pairing.notice_minutes (10).
    h.app.clock.advance(minutes=10)
    await says_in_group(h, BEN, "hello", expect=3)  # (after Ana's "You're in!")
    await let_in(h, BEN)  # both are people Valet knows now
    await h.tg.wait_for(lambda: len(bot_messages(h.tg, GROUP)) == 4)
    fake_llm.script(Reply(tool_calls=[ToolCall("send_email", {"to": "team@corp.example",
                                                              "subject": "Q3"})]))
    await says_in_group(h, ANA, "email the team about Q3", expect=5)
    [card] = [m for m in h.tg.sent(GROUP) if m.buttons]
    approve = next(b["callback_data"] for b in card.buttons if "Approve" in b["text"])
    h.tg.user_presses(GROUP, card.message_id, approve, sender=BEN, chat_type=SUPERGROUP)
    await h.tg.wait_for(lambda: h.tg.called("answerCallbackQuery"), timeout=30)
    await h.app.gateway.wait_idle()
    assert h.tg.called("answerCallbackQuery")[0].params["text"] == \
        "That request isn't yours to decide."
    assert risky_tools.SENT == []  # Ben's press sent nothing
    fake_llm.script(Reply(content="Sent."))
    h.tg.user_presses(GROUP, card.message_id, approve, sender=ANA, chat_type=SUPERGROUP)
    await h.tg.wait_for(lambda: "Sent." in bot_messages(h.tg, GROUP), timeout=30)
    await h.app.gateway.wait_idle()
    assert len(risky_tools.SENT) == 1


async def test_the_owner_is_the_owner_in_a_group(start_telegram, fake_llm, tmp_path):
    h = await started(start_telegram, tmp_path)
    fake_llm.script(Reply(content="Yes, boss."))
    await says_in_group(h, OWNER_CHAT, "are you there?", expect=1)
    assert bot_messages(h.tg, GROUP) == ["Yes, boss."]  # no pairing for the owner
    owner = await h.app.identities.resolve("telegram", f"{GROUP}:{OWNER_CHAT}")
    assert owner is not None and owner.is_owner
