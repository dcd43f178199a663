"""Approvals on Telegram: buttons that carry the request's id, taps, and outcomes, through the
real python-telegram-bot, the fake Bot API server and the real approvals package."""

from __future__ import annotations

from tests.e2e.telegram_harness import (
    OWNER_CHAT,
    bot_messages,
    prompt_with_buttons,
    risky_registry,
)
from tests.fakes.fake_openai import Reply, ToolCall


async def test_edit_shows_the_outcome_and_drops_the_buttons(start_telegram, fake_llm):
    from datetime import UTC, datetime

    from bot.contracts.envelopes import ApprovalPrompt, OutboundMessage

    h = await start_telegram()
    h.tg.user_says(OWNER_CHAT, "/whoami")
    await h.tg.wait_for(lambda: bot_messages(h.tg, OWNER_CHAT))
    prompt = ApprovalPrompt(id="apr_0123456789abcdef0123456789abcdef", code="4821", position=1,
                            summary="Delete the note “Dentist”", details=(("title", "Dentist"),),
                            allow_modification=False,
                            expires_at=datetime(2026, 1, 5, 10, tzinfo=UTC))
    channel = h.service.channel
    message_id = await channel.send(OutboundMessage(
        900, "owner", "telegram", str(OWNER_CHAT), "Shall I?", prompts=(prompt,)))
    sent = h.tg.messages[int(message_id)]
    assert [b["text"] for b in sent.buttons] == ["✅ Approve", "✖️ Cancel"]
    assert [b["callback_data"] for b in sent.buttons] == [
        f"a:{prompt.id}:approve", f"a:{prompt.id}:cancel"]
    edit = OutboundMessage(901, "owner", "telegram", str(OWNER_CHAT), "Approved: note deleted",
                           kind=f"edit:{message_id}")
    assert await channel.send(edit) == message_id
    assert await channel.send(edit) == message_id  # "message is not modified" is success
    assert sent.text == "Approved: note deleted" and sent.buttons == []


async def test_a_press_on_an_unreadable_button_is_answered_at_once(start_telegram):
    h = await start_telegram()
    h.tg.user_says(OWNER_CHAT, "/whoami")
    await h.tg.wait_for(lambda: bot_messages(h.tg, OWNER_CHAT))
    message_id = h.tg.sent(OWNER_CHAT)[0].message_id
    h.tg.user_presses(OWNER_CHAT, message_id, "old-format-data")
    await h.tg.wait_for(lambda: h.tg.called("answerCallbackQuery"))
    assert h.tg.called("answerCallbackQuery")[0].params["text"] == (
        "This button is no longer valid.")


async def test_tap_approve_runs_the_action_once_and_the_answer_arrives(
        start_telegram, fake_llm, tmp_path):
    from tests.fakes import risky_tools

    risky_tools.SENT.clear()
    risky_registry(tmp_path)
    h = await start_telegram()
    prompt, data = await prompt_with_buttons(h.tg, fake_llm)
    assert "send email" in prompt.text and "team@corp.example" in prompt.text
    assert data["Approve"].startswith("a:") and data["Approve"].endswith(":approve")
    assert risky_tools.SENT == []
    fake_llm.script(Reply(content="Sent: the team has the Q3 note."))
    h.tg.user_presses(OWNER_CHAT, prompt.message_id, data["Approve"])
    h.tg.user_presses(OWNER_CHAT, prompt.message_id, data["Approve"])  # double tap
    await h.tg.wait_for(lambda: "Sent: the team has the Q3 note." in bot_messages(
        h.tg, OWNER_CHAT))
    await h.app.gateway.wait_idle()
    assert [e["to"] for e in risky_tools.SENT] == ["team@corp.example"]


async def test_tap_cancel_runs_nothing(start_telegram, fake_llm, tmp_path):
    from tests.fakes import risky_tools

    risky_tools.SENT.clear()
    risky_registry(tmp_path)
    h = await start_telegram()
    prompt, data = await prompt_with_buttons(h.tg, fake_llm)
    assert set(data) == {"Approve", "Edit", "Cancel"}
    fake_llm.script(Reply(content="OK, I won't send it."))
    h.tg.user_presses(OWNER_CHAT, prompt.message_id, data["Cancel"])
    await h.tg.wait_for(lambda: "OK, I won't send it." in bot_messages(h.tg, OWNER_CHAT))
    await h.app.gateway.wait_idle()
    assert risky_tools.SENT == []


async def test_another_users_tap_decides_nothing(start_telegram, fake_llm, tmp_path):
    from tests.fakes import risky_tools

    risky_tools.SENT.clear()
    risky_registry(tmp_path)
    h = await start_telegram()
    await h.app.users.ensure("kim", display_name="Kim", at=h.app.clock.now())
    await h.app.identities.link("telegram", "43", "kim", at=h.app.clock.now())
    prompt, data = await prompt_with_buttons(h.tg, fake_llm)
    h.tg.user_says(43, "/whoami")  # Kim has a chat with the bot
    await h.tg.wait_for(lambda: bot_messages(h.tg, 43))
    # Kim forges a press on the owner's request (the data is guessable: it holds only the id).
    h.tg.user_presses(43, prompt.message_id, data["Approve"], sender=43)
    await h.tg.wait_for(lambda: len(bot_messages(h.tg, 43)) == 2)
    await h.app.gateway.wait_idle()
    assert bot_messages(h.tg, 43)[-1] == "That request isn't yours to decide."
    assert risky_tools.SENT == []


async def test_a_tap_is_answered_at_once_and_the_prompt_then_shows_the_outcome(
        start_telegram, fake_llm, tmp_path):
    from tests.fakes import risky_tools

    risky_tools.SENT.clear()
    risky_registry(tmp_path)
    h = await start_telegram()
    prompt, data = await prompt_with_buttons(h.tg, fake_llm)
    fake_llm.script(Reply(content="Sent."))
    h.tg.user_presses(OWNER_CHAT, prompt.message_id, data["Approve"])
    await h.tg.wait_for(lambda: "Sent." in bot_messages(h.tg, OWNER_CHAT), timeout=30)
    await h.tg.wait_for(lambda: not prompt.buttons, timeout=30)
    await h.app.gateway.wait_idle()
    answers = [c.params["text"] for c in h.tg.called("answerCallbackQuery")]
    assert answers[0] == "Approving…"
    assert "Done: send email" in prompt.text and prompt.buttons == []
    # A second tap on the settled prompt: "already", and nothing runs again.
    h.tg.user_presses(OWNER_CHAT, prompt.message_id, data["Approve"])
    await h.tg.wait_for(lambda: len(h.tg.called("answerCallbackQuery")) == 2, timeout=30)
    assert h.tg.called("answerCallbackQuery")[1].params["text"] == "Already done."
    await h.app.gateway.wait_idle()
    assert len(risky_tools.SENT) == 1


async def test_an_expired_prompt_is_edited_when_the_sweeper_settles_it(
        start_telegram, fake_llm, tmp_path):
    from bot.contracts.clock import FakeClock

    clock = FakeClock()
    risky_registry(tmp_path)
    h = await start_telegram(clock=clock)
    prompt, _ = await prompt_with_buttons(h.tg, fake_llm)
    await h.app.gateway.wait_idle()  # the prompt's outbox row is marked sent
    clock.advance(minutes=31)
    await h.app.sweep_approvals()
    await h.tg.wait_for(lambda: not prompt.buttons, timeout=30)
    assert "Expired: send email" in prompt.text


async def test_the_owner_lets_a_stranger_in_with_a_button(start_telegram, fake_llm):
    h = await start_telegram()
    h.tg.user_says(OWNER_CHAT, "/whoami")  # the owner has a chat with the bot
    await h.tg.wait_for(lambda: bot_messages(h.tg, OWNER_CHAT), timeout=30)
    h.tg.user_says(777, "hello?", sender=777)
    await h.tg.wait_for(lambda: any(m.buttons for m in h.tg.sent(OWNER_CHAT)), timeout=30)
    [notice] = [m for m in h.tg.sent(OWNER_CHAT) if m.buttons]
    assert "wants to talk to me" in notice.text
    approve = next(b["callback_data"] for b in notice.buttons if "Approve" in b["text"])
    h.tg.user_presses(OWNER_CHAT, notice.message_id, approve)
    await h.tg.wait_for(lambda: any("You're in" in t for t in bot_messages(h.tg, 777)), timeout=30)
    await h.app.gateway.wait_idle()
    assert await h.app.identities.resolve("telegram", "777") is not None
    assert h.tg.called("answerCallbackQuery")[0].params["text"] == "Letting them in…"
    assert fake_llm.calls == 0  # no LLM for the stranger, nor for the owner's decision


async def test_edit_asks_for_the_change_in_the_chat_and_the_edited_action_runs_once(
        start_telegram, fake_llm, tmp_path):
    from tests.fakes import risky_tools

    risky_tools.TODOS.clear()
    registry = tmp_path / "todo.yaml"
    registry.write_text("tools:\n  - module: tests.fakes.risky_tools\n    only: [add_todo]\n"
                        "    approval: always\n")
    (tmp_path / "valet.yaml").write_text(
        f"loop:\n  llm_retry_base_delay: 0.01\nagents:\n  registries: [{registry}]\n"
        "  answer_check: heuristic\nowner:\n  telegram_ids: ['42']\n")
    h = await start_telegram()
    fake_llm.script(Reply(tool_calls=[ToolCall("add_todo", {"text": "buy milk"})]))
    h.tg.user_says(OWNER_CHAT, "put milk on my list")
    await h.tg.wait_for(lambda: any(m.buttons for m in h.tg.sent(OWNER_CHAT)))
    [first] = [m for m in h.tg.sent(OWNER_CHAT) if m.buttons]
    assert "buy milk" in first.text
    buttons = {b["text"].split()[-1]: b["callback_data"] for b in first.buttons}

    # Edit: the tap is answered at once, and Valet asks in the chat what to change.
    h.tg.user_presses(OWNER_CHAT, first.message_id, buttons["Edit"])
    await h.tg.wait_for(lambda: len(bot_messages(h.tg, OWNER_CHAT)) == 2)
    assert h.tg.called("answerCallbackQuery")[0].params["text"] == "Tell me what to change."
    question = bot_messages(h.tg, OWNER_CHAT)[-1]
    assert question.startswith("What should I change in") and "buy milk" in question
    assert 'e.g. "make the text …"' in question  # the action's own field, not a stock one
    assert first.buttons, "the card still waits: nothing was decided yet"

    # The change, in words: a new card with the changed argument; the first card says so.
    fake_llm.script(Reply(content='{"text": "buy oat milk"}'))  # the arguments, rewritten
    h.tg.user_says(OWNER_CHAT, "make it 'buy oat milk'")
    await h.tg.wait_for(lambda: len([m for m in h.tg.sent(OWNER_CHAT) if m.buttons]) == 1
                        and not first.buttons)
    [second] = [m for m in h.tg.sent(OWNER_CHAT) if m.buttons]
    assert second.message_id != first.message_id
    assert "buy oat milk" in second.text
    assert "Replaced by an edited request" in first.text and first.buttons == []
    assert risky_tools.TODOS == []

    # Approve the new card: the action runs once, with the new arguments.
    fake_llm.script(Reply(content="Added: buy oat milk."))
    data = {b["text"].split()[-1]: b["callback_data"] for b in second.buttons}
    h.tg.user_presses(OWNER_CHAT, second.message_id, data["Approve"])
    h.tg.user_presses(OWNER_CHAT, first.message_id, buttons["Approve"])  # the old card: no
    await h.tg.wait_for(lambda: "Added: buy oat milk." in bot_messages(h.tg, OWNER_CHAT))
    await h.tg.wait_for(lambda: not second.buttons)
    await h.app.gateway.wait_idle()
    assert [t["text"] for t in risky_tools.TODOS] == ["buy oat milk"]
    assert "Done" in second.text


async def test_a_pairing_card_settles_once_the_owner_decides(start_telegram, fake_llm):
    h = await start_telegram()
    h.tg.user_says(OWNER_CHAT, "/whoami")  # a bot may only write to a chat that wrote first
    await h.tg.wait_for(lambda: bot_messages(h.tg, OWNER_CHAT))
    stranger = 777
    h.tg.user_says(stranger, "hello, who are you?")
    await h.tg.wait_for(lambda: any(m.buttons for m in h.tg.sent(OWNER_CHAT)))
    [card] = [m for m in h.tg.sent(OWNER_CHAT) if m.buttons]
    data = {b["text"].split()[-1]: b["callback_data"] for b in card.buttons}
    h.tg.user_presses(OWNER_CHAT, card.message_id, data["Approve"])
    await h.tg.wait_for(lambda: not card.buttons, timeout=30)  # edited: no more buttons
    await h.app.gateway.wait_idle()
    assert card.text.splitlines()[-1].startswith("Let in: ")
    assert "u_" not in "\n".join(bot_messages(h.tg, OWNER_CHAT))  # people, never ids
    assert fake_llm.calls == 0
