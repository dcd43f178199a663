"""Telegram end to end: the real python-telegram-bot against the fake Bot API server, the real
gateway and outbox, the fake LLM behind the real openai client."""

from __future__ import annotations

import aiohttp
import pytest

from bot.contracts.clock import SystemClock
from channels.telegram.checks import WEBHOOK_PATH
from channels.telegram.lease import FileLease
from channels.telegram.limiter import Limits
from persona.lines import DEFAULT
from tests.e2e.telegram_harness import OWNER_CHAT, SECRET, bot_messages
from tests.fakes.fake_openai import Reply, ToolCall
from tests.fakes.fake_telegram import parse_html
from tests.helpers import said


async def test_a_plain_chat_is_answered(start_telegram, fake_llm):
    fake_llm.script(Reply(content="Hello **Alice**! How can I help?"))
    h = await start_telegram()
    h.tg.user_says(OWNER_CHAT, "hi there")
    await h.tg.wait_for(lambda: bot_messages(h.tg, OWNER_CHAT))
    [answer] = h.tg.sent(OWNER_CHAT)
    assert answer.text == "Hello Alice! How can I help?"
    assert answer.raw == "Hello <b>Alice</b>! How can I help?"
    assert said(fake_llm.requests[0]["messages"][-1]["content"]).endswith("hi there")
    # The menu is the command table's (tests/e2e/test_telegram_menu.py has the whole story).
    menu = [c["command"] for c in h.tg.commands]
    assert {"start", "help", "pending", "cancel", "stop", "link", "whoami"} <= set(menu)
    assert h.tg.called("sendChatAction"), "typing is shown while the turn runs"


async def test_a_5000_character_answer_arrives_as_two_valid_messages(start_telegram, fake_llm):
    paragraphs = [f"Paragraph {i}: " + "lorem ipsum dolor sit amet " * 9 for i in range(20)]
    long_answer = "\n\n".join(paragraphs)
    assert 4096 < len(long_answer) < 8000
    fake_llm.script(Reply(content=long_answer))
    h = await start_telegram()
    h.tg.user_says(OWNER_CHAT, "tell me a lot")
    await h.tg.wait_for(lambda: len(bot_messages(h.tg, OWNER_CHAT)) >= 2)
    await h.app.gateway.wait_idle()
    parts = bot_messages(h.tg, OWNER_CHAT)
    assert len(parts) == 2
    assert all(len(p) <= 4096 for p in parts)
    assert " ".join(" ".join(parts).split()) == " ".join(long_answer.split())


async def test_angle_brackets_ampersands_and_broken_markdown_still_arrive(start_telegram,
                                                                          fake_llm):
    text = "If a < b && c > d then **bold never closes and `code too <script>"
    fake_llm.script(Reply(content=text))
    h = await start_telegram()
    h.tg.user_says(OWNER_CHAT, "compare")
    await h.tg.wait_for(lambda: bot_messages(h.tg, OWNER_CHAT))
    assert bot_messages(h.tg, OWNER_CHAT) == [text]


async def test_html_telegram_rejects_goes_again_as_plain_text(start_telegram, fake_llm):
    fake_llm.script(Reply(content="Totally *fine* text"))
    h = await start_telegram()
    h.tg.fail_next("sendMessage", 400, description="Bad Request: can't parse entities: "
                                                   "Unsupported start tag at byte offset 3")
    h.tg.user_says(OWNER_CHAT, "hello")
    await h.tg.wait_for(lambda: bot_messages(h.tg, OWNER_CHAT))
    [message] = h.tg.sent(OWNER_CHAT)
    assert message.text == "Totally *fine* text" and message.parse_mode is None


async def test_a_burst_of_429s_every_message_arrives_once_in_order_within_limits(
        start_telegram, fake_llm):
    fake_llm.responder = lambda body: Reply(
        content="echo " + said(body["messages"][-1]["content"]).split()[-1])
    limits = Limits(per_chat_rate=4.0, per_chat_burst=1, per_bot_rate=6.0, per_bot_burst=1)
    h = await start_telegram(clock=SystemClock(), limits=limits)
    h.app.outbound.deliverer.policy.base_delay = 0.05  # retry as soon as Telegram allows
    chats = [OWNER_CHAT, 43]
    await h.app.identities.link("telegram", "43", "owner", at=h.app.clock.now())
    h.tg.fail_next("sendMessage", 429, retry_after=1, times=3)
    for i in range(4):
        for chat in chats:
            h.tg.user_says(chat, f"message m{i}")
    await h.tg.wait_for(lambda: len(h.tg.sent()) == 8, timeout=30)
    for chat in chats:
        assert bot_messages(h.tg, chat) == [f"echo m{i}" for i in range(4)]
    sends = h.tg.called("sendMessage")
    refused = [c.at for c in sends[:3]]
    accepted = [c.at for c in sends[3:]]
    assert len(accepted) == 8
    # Nothing was sent before Telegram's retry_after had passed since the last 429.
    assert min(accepted) - max(refused) >= 1.0 - 0.05
    # No faster than the bot's limit: 8 messages at 6/s with a burst of 1 take >= 7/6 s.
    assert accepted[-1] - accepted[0] >= 7 / 6 - 0.1
    for chat in chats:
        times = [c.at for c in sends[3:] if int(c.params["chat_id"]) == chat]
        # No faster than the chat's limit, 4/s: over the chat's four, >= 3/4 s. (Measured
        # between arrivals here, each gap also holds the machine's delay in sending it: at
        # load 15 one send arrived late and the next on time, under 0.2 s apart. The span is
        # what the pace decides.)
        assert times[-1] - times[0] >= (len(times) - 1) * 0.25 - 0.1


async def test_webhook_refuses_a_missing_or_wrong_secret_and_stores_nothing(start_telegram,
                                                                           fake_llm):
    fake_llm.script(Reply(content="Got it."))
    h = await start_telegram(mode="webhook")
    assert h.tg.webhook["url"] == h.webhook_base + WEBHOOK_PATH
    assert h.tg.webhook["secret_token"] == SECRET
    update = h.tg.user_says(OWNER_CHAT, "hello by webhook")
    assert await h.tg.deliver_webhook(update, secret=None) == 403
    assert await h.tg.deliver_webhook(update, secret="wrong-secret") == 403
    assert await h.inbox_count() == 0
    assert await h.tg.deliver_webhook(update) == 200
    assert await h.tg.deliver_webhook(update) == 200  # Telegram delivers it again
    await h.app.gateway.wait_idle()
    await h.tg.wait_for(lambda: bot_messages(h.tg, OWNER_CHAT))
    assert bot_messages(h.tg, OWNER_CHAT) == ["Got it."]
    assert await h.inbox_count() == 1
    assert fake_llm.calls == 1
    await h.service.stop()  # shutting down: Telegram is told to come back later
    assert await h.tg.deliver_webhook(h.tg.user_says(OWNER_CHAT, "late")) == 503
    assert await h.inbox_count() == 1


async def test_webhook_with_a_body_that_is_not_an_update_is_refused(start_telegram):
    h = await start_telegram(mode="webhook")
    async with aiohttp.ClientSession() as http, http.post(
            h.webhook_base + WEBHOOK_PATH, data=b"not json",
            headers={"X-Telegram-Bot-Api-Secret-Token": SECRET}) as resp:
        assert resp.status == 400
    assert await h.inbox_count() == 0


async def test_a_voice_note_is_transcribed_shown_and_answered(start_telegram, fake_llm):
    fake_llm.transcript = "remind me to buy milk"
    fake_llm.script(Reply(content="I'll remember the milk."))
    h = await start_telegram(transcription=True)
    h.tg.user_sends_voice(OWNER_CHAT, b"OggS fake audio")
    await h.tg.wait_for(lambda: len(bot_messages(h.tg, OWNER_CHAT)) == 1)
    # The transcript is the reply's first line: what Valet understood, then its answer.
    assert bot_messages(h.tg, OWNER_CHAT) == ["🎤 “remind me to buy milk”\n\n"
                                              "I'll remember the milk."]
    assert fake_llm.transcriptions == [{"model": "whisper-test", "audio": b"OggS fake audio"}]
    assert said(fake_llm.requests[0]["messages"][-1]["content"]).endswith("remind me to buy milk")


async def test_a_photo_with_vision_off_gets_the_polite_sentence(start_telegram, fake_llm):
    h = await start_telegram()
    h.tg.user_sends_photo(OWNER_CHAT)
    h.tg.user_sends_sticker(OWNER_CHAT)
    await h.tg.wait_for(lambda: len(bot_messages(h.tg, OWNER_CHAT)) == 2)
    assert bot_messages(h.tg, OWNER_CHAT) == [
        DEFAULT.telegram_cannot_see, "I can't read a sticker yet: please write to me."]
    assert fake_llm.calls == 0


async def test_a_photo_delivered_twice_gets_the_polite_sentence_once(start_telegram, fake_llm):
    h = await start_telegram(mode="webhook")
    update = h.tg.user_sends_photo(OWNER_CHAT)
    assert await h.tg.deliver_webhook(update) == 200
    assert await h.tg.deliver_webhook(update) == 200  # Telegram delivers it again
    await h.tg.wait_for(lambda: bot_messages(h.tg, OWNER_CHAT))
    await h.app.gateway.wait_idle()
    # Once, through the outbox.
    assert bot_messages(h.tg, OWNER_CHAT) == [DEFAULT.telegram_cannot_see]
    assert fake_llm.calls == 0


async def test_an_unknown_sender_gets_the_pairing_reply_and_no_llm_request(start_telegram,
                                                                         fake_llm):
    h = await start_telegram()
    stranger = 777
    h.tg.user_says(stranger, "hello, who are you?")
    h.tg.user_sends_voice(stranger, b"audio")
    await h.tg.wait_for(lambda: bot_messages(h.tg, stranger))
    await h.app.gateway.wait_idle()
    [reply] = bot_messages(h.tg, stranger)
    assert "code" in reply.lower()
    assert fake_llm.calls == 0 and fake_llm.transcriptions == []
    assert not [c for c in h.tg.called("sendChatAction")
                if int(c.params["chat_id"]) == stranger]


async def test_progress_is_one_status_message_edited_in_place(start_telegram, fake_llm):
    fake_llm.script(
        Reply(tool_calls=[ToolCall("calculate", {"expression": "6*7"}),
                          ToolCall("current_time", {"timezone": "Europe/Paris"})]),
        Reply(content="42, and it is morning in Paris."))
    h = await start_telegram(status_delay=0.0)
    h.tg.user_says(OWNER_CHAT, "what is 6*7 and the time in Paris?")
    await h.tg.wait_for(lambda: any("42" in t for t in bot_messages(h.tg, OWNER_CHAT)))
    await h.app.gateway.wait_idle()
    messages = h.tg.sent(OWNER_CHAT)
    status, answer = messages
    assert answer.text == "42, and it is morning in Paris."
    assert status.text.startswith("✓ ")  # the one status message, kept and marked done
    assert h.tg.called("sendChatAction")
    assert not h.tg.called("deleteMessage")


async def test_a_quick_turn_shows_no_status_message(start_telegram, fake_llm):
    fake_llm.script(Reply(tool_calls=[ToolCall("calculate", {"expression": "1+1"})]),
                    Reply(content="2"))
    h = await start_telegram(status_delay=30.0)
    h.tg.user_says(OWNER_CHAT, "1+1?")
    await h.tg.wait_for(lambda: bot_messages(h.tg, OWNER_CHAT))
    await h.app.gateway.wait_idle()
    assert bot_messages(h.tg, OWNER_CHAT) == ["2"]


async def test_a_second_poller_on_the_same_bot_stands_by(start_telegram, fake_llm, tmp_path):
    fake_llm.responder = lambda body: Reply(content="once")
    first = await start_telegram()
    first.tg.user_says(OWNER_CHAT, "hello")
    await first.tg.wait_for(lambda: bot_messages(first.tg, OWNER_CHAT))
    second_lease = FileLease(tmp_path / "poller.lock")  # another process's, on this machine
    assert not await second_lease.acquire()
    await first.service.stop()
    assert await second_lease.acquire()  # free once the first stopped
    await second_lease.release()


def test_fake_server_rejects_what_telegram_rejects():
    from tests.fakes.fake_telegram import ApiError

    assert parse_html("<b>a &amp; b</b>") == "a & b"
    for bad in ("a < b", "<b>open", "<script>x</script>", "a & b"):
        with pytest.raises(ApiError, match="can't parse entities"):
            parse_html(bad)


async def test_groups_are_off_by_default_and_on_only_when_mentioned_or_replied_to(
        start_telegram, fake_llm, fake_tg):
    fake_llm.responder = lambda body: Reply(
        content="re: " + said(body["messages"][-1]["content"]).split("\n")[-1])
    group = -1001
    h = await start_telegram(owner_ids=(str(OWNER_CHAT), str(group)))
    h.tg.user_says(group, "@valet_test_bot are you there?", chat_type="supergroup")
    h.tg.user_says(OWNER_CHAT, "private hello")
    await h.tg.wait_for(lambda: bot_messages(h.tg, OWNER_CHAT))
    await h.app.gateway.wait_idle()
    assert bot_messages(h.tg, group) == []  # telegram.groups is off
    h.service.inbound.settings.groups = True
    h.tg.user_says(group, "just chatting among ourselves", chat_type="supergroup")
    h.tg.user_says(group, "@valet_test_bot what's up?", chat_type="supergroup")
    await h.tg.wait_for(lambda: bot_messages(h.tg, group))
    [answer] = h.tg.sent(group)
    h.tg.user_says(group, "and tomorrow?", chat_type="supergroup", reply_to=answer.message_id)
    await h.tg.wait_for(lambda: len(bot_messages(h.tg, group)) == 2)
    await h.app.gateway.wait_idle()
    assert [m.split("re: ")[-1] for m in bot_messages(h.tg, group)] == [
        "what's up?", "and tomorrow?"]


async def test_a_person_who_blocked_the_bot_is_unreachable_not_retried(start_telegram):
    from bot.channel import PermanentSendError
    from bot.contracts.envelopes import OutboundMessage

    h = await start_telegram()
    h.tg.user_says(OWNER_CHAT, "/whoami")
    await h.tg.wait_for(lambda: bot_messages(h.tg, OWNER_CHAT))
    h.tg.blocked.add(OWNER_CHAT)
    with pytest.raises(PermanentSendError) as blocked:
        await h.service.channel.send(OutboundMessage(1, "owner", "telegram", str(OWNER_CHAT),
                                                     "Your reminder", kind="notification"))
    assert blocked.value.unreachable
    with pytest.raises(PermanentSendError) as unknown:
        await h.service.channel.send(OutboundMessage(2, None, "telegram", "999", "hi"))
    assert unknown.value.unreachable


async def test_a_long_message_cut_short_by_a_server_error_sends_only_the_rest_on_retry(
        start_telegram):
    from bot.channel import TransientSendError
    from bot.contracts.envelopes import OutboundMessage

    h = await start_telegram()
    h.tg.user_says(OWNER_CHAT, "/whoami")
    await h.tg.wait_for(lambda: bot_messages(h.tg, OWNER_CHAT))
    long_text = "\n\n".join(f"Part of a long answer, paragraph {i}. " * 10 for i in range(30))
    message = OutboundMessage(77, "owner", "telegram", str(OWNER_CHAT), long_text)
    before = len(h.tg.sent(OWNER_CHAT))
    original = h.tg._m_sendMessage
    calls = 0

    async def second_part_fails_once(params):  # the first part lands, the second does not
        nonlocal calls
        calls += 1
        if calls == 2:
            from tests.fakes.fake_telegram import ApiError
            raise ApiError(502, "Bad Gateway")
        return await original(params)

    h.tg._m_sendMessage = second_part_fails_once
    with pytest.raises(TransientSendError):
        await h.service.channel.send(message)
    await h.service.channel.send(message)  # the outbox's retry
    parts = bot_messages(h.tg, OWNER_CHAT)[before:]
    assert len(parts) == 3
    assert " ".join(" ".join(parts).split()) == " ".join(long_text.split())
