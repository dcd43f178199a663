"""A person texts Valet's Twilio number: signed webhooks over real HTTP, the real twilio
client sending replies to a fake Twilio REST server, the fake LLM thinking."""

from __future__ import annotations

import asyncio
from argparse import Namespace

import pytest

from bot.channel import PermanentSendError, TransientSendError
from bot.cli.admin import _users
from bot.config.channel_sections import SmsSettings
from bot.contracts.envelopes import ApprovalPrompt, OutboundMessage
from channels.sms.gsm import is_gsm
from channels.sms.store import SmsStore
from persona.lines import DEFAULT as LINES
from tests.fakes.fake_openai import Reply as LLMReply
from tests.fakes.fake_openai import ToolCall
from tests.fakes.sms_segments import segments
from tests.helpers import said
from tests.integration.sms_harness import (
    ALICE,
    FROM_NUMBER,
    PUBLIC_URL,
    SmsWorld,
    new_sid,
    sms_world,
)

EMPTY_TWIML = '<?xml version="1.0" encoding="UTF-8"?><Response/>'


@pytest.fixture
async def world(app_factory):
    world, close = await sms_world(app_factory)
    yield world
    await close()


async def alice(world: SmsWorld):
    user = await world.app.identities.resolve("sms", ALICE)
    assert user is not None
    return user


async def test_a_signed_text_is_acknowledged_with_empty_twiml_and_answered_through_twilio(
        world, fake_llm):
    fake_llm.script(LLMReply(content="Hello Alice! It's sunny."))
    response = await world.text("hi, what's the weather?")
    assert response.status == 200
    assert response.content_type == "text/xml"
    assert await response.text() == EMPTY_TWIML
    await world.idle()
    [sent] = world.twilio.sent
    assert (sent.to, sent.from_, sent.body) == (ALICE, FROM_NUMBER, "Hello Alice! It's sunny.")
    row = await world.last_outbox()
    assert sent.status_callback == f"{PUBLIC_URL}/sms/status?outbox={row['id']}"
    assert row["status"] == "sent" and row["channel_message_id"] == sent.sid
    assert (row["segments"], row["encoding"]) == (1, "GSM-7")
    assert world.twilio.refused_auth == 0
    # The person's words reached the LLM as theirs.
    assert said(fake_llm.requests[0]["messages"][-1]["content"]) == "hi, what's the weather?"


async def test_forged_unsigned_or_elsewhere_signed_requests_get_403_and_store_nothing(
        world, fake_llm):
    unsigned = await world.text("hi", signature="")
    forged = await world.text("hi", signature="bm90IGEgc2lnbmF0dXJl")
    elsewhere = await world.text("hi", public_url="https://attacker.example")
    assert [unsigned.status, forged.status, elsewhere.status] == [403, 403, 403]
    assert await world.inbox_rows() == 0
    await world.idle()
    assert world.twilio.sent == [] and fake_llm.requests == []


async def test_a_body_over_the_limit_is_refused_before_it_is_read(world):
    response = await world.text("x" * 70_000)
    assert response.status == 413
    assert await world.inbox_rows() == 0


async def test_the_same_message_sid_three_times_also_concurrently_gets_one_reply(
        world, fake_llm):
    fake_llm.responder = lambda request: LLMReply(content="One answer.")
    sid = new_sid()
    for _ in range(3):
        assert (await world.text("hello", sid=sid)).status == 200
    other = new_sid()
    responses = await asyncio.gather(*[world.text("hello again", sid=other) for _ in range(3)])
    assert [r.status for r in responses] == [200, 200, 200]
    await world.idle()
    assert len(fake_llm.requests) == 2
    assert world.replies() == ["One answer.", "One answer."]
    assert await world.inbox_rows() == 2


async def test_twilio_5xx_and_429_are_retried_without_sending_twice(world, fake_llm):
    fake_llm.script(LLMReply(content="Here you go."))
    world.twilio.fail_next(503)
    await world.text("hi")
    await world.idle()  # the retry waits for its time
    row = await world.last_outbox()
    assert row["status"] == "pending" and "503" in row["last_error"]
    world.twilio.fail_next(429, 20429, retry_after=30)
    world.app.clock.advance(10)
    world.app.outbound.deliverer.wake()
    await world.idle()
    row = await world.outbox_row(row["id"])
    assert row["status"] == "pending"
    assert (row["next_attempt_at"] - world.app.clock.now()).total_seconds() >= 30
    world.app.clock.advance(31)
    world.app.outbound.deliverer.wake()
    await world.idle()
    assert world.replies() == ["Here you go."]
    assert (await world.outbox_row(row["id"]))["status"] == "sent"


async def test_six_requests_at_once_go_one_card_a_message_within_the_cap_and_a_retry_sends_once(
        world):
    """Six requests to approve at once are longer than one message may be: the first goes with
    the text, each within sms.max_segments, its code and answer whole; the next after MORE
    (issue 44: the cap has no exception). A send that failed is sent once on its retry."""
    summaries = [f"Send the long weekly report number {i} to the team list; " + "x" * 240
                 for i in range(6)]
    prompts = tuple(ApprovalPrompt(f"a{i}", f"{1000 + i}", i + 1, summary)
                    for i, summary in enumerate(summaries))
    message = OutboundMessage(77, None, "sms", ALICE, "Before I go ahead, I need your OK:",
                              prompts)
    world.twilio.fail_next(500)
    with pytest.raises(TransientSendError):
        await world.send(message)
    assert world.twilio.sent == []
    await world.send(message)  # the outbox's retry
    [first] = world.replies()
    assert segments(first).count <= 3
    assert first.startswith("Before I go ahead") and "code 1000\nReply 1000 YES" in first
    assert first.startswith(f"Before I go ahead, I need your OK: {LINES.sms_more}\n1) ")
    assert "1001" not in first
    row = await world.app.db.fetchrow(
        "SELECT segments FROM sms_messages WHERE outbox_id = 77")
    assert row["segments"] == segments(first).count == world.twilio.segments_to(ALICE)


async def test_opted_out_and_invalid_numbers_are_permanent_failures(world):
    world.twilio.fail_to("+12125550987", 21610)
    world.twilio.fail_to("+15550000000", 21211)
    with pytest.raises(PermanentSendError) as opted_out:
        await world.send(OutboundMessage(901, None, "sms", "+12125550987", "hi"))
    with pytest.raises(PermanentSendError) as invalid:
        await world.send(OutboundMessage(902, None, "sms", "+15550000000", "hi"))
    assert opted_out.value.opted_out and not invalid.value.opted_out
    assert invalid.value.unreachable
    assert world.twilio.sent == []


async def test_a_three_thousand_character_answer_is_shortened_once_then_cut_with_more(
        world, fake_llm):
    sentences = [f"Sentence {i:03d} explains one more part of the plan." for i in range(60)]
    answer = " ".join(sentences)
    assert 2900 < len(answer) < 3300
    shorter = " ".join(sentences[:30])  # asked to shorten, the model is still too long
    fake_llm.script(LLMReply(content=answer), LLMReply(content=shorter))
    await world.text("explain the plan in detail")
    await world.idle()
    assert "Shorten this message" in fake_llm.requests[1]["messages"][0]["content"]
    [first] = world.replies()
    assert first.endswith("plan. (reply MORE for the rest)")
    assert world.twilio.sent[0].segments <= 3 and world.twilio.sent[0].encoding == "GSM-7"
    calls = fake_llm.calls
    await world.text("more")
    await world.idle()
    assert fake_llm.calls == calls  # the rest comes with no LLM call
    second = world.replies()[1]
    said = first.removesuffix(" (reply MORE for the rest)") + " " + \
        second.removesuffix(" (reply MORE for the rest)")
    assert shorter.startswith(said)
    assert world.twilio.segments_to(ALICE) <= 6


async def test_smart_quotes_and_dashes_stay_gsm7_and_cost_one_segment(world, fake_llm):
    fake_llm.script(LLMReply(content="“Dentist” is at 3pm — don’t be late…"))
    await world.text("when is the dentist?")
    await world.idle()
    assert world.replies() == ['"Dentist" is at 3pm - don\'t be late...']
    row = await world.last_outbox()
    assert (row["segments"], row["encoding"]) == (1, "GSM-7")


async def test_markdown_is_stripped_and_emoji_dropped_for_a_persona_without_them(
        world, fake_llm):
    fake_llm.script(LLMReply(content="**Done!** 🎉 See [the forecast](https://wx.example/ny)."))
    await world.text("weather?")
    await world.idle()
    assert world.replies() == ["Done! See the forecast (https://wx.example/ny)."]


async def test_delivery_reports_are_recorded_and_a_failure_is_not_overwritten(world, fake_llm):
    fake_llm.script(LLMReply(content="Noted."))
    await world.text("note: buy milk")
    await world.idle()
    row = await world.last_outbox()
    assert (await world.status(row["id"], "sent")).status == 200
    assert (await world.status(row["id"], "undelivered", error="30003")).status == 200
    assert (await world.status(row["id"], "delivered")).status == 200
    row = await world.outbox_row(row["id"])
    assert (row["delivery_status"], row["delivery_error"]) == ("undelivered", "30003")
    forged = await world.status(row["id"], "delivered", signature="Zm9yZ2Vk")
    assert forged.status == 403


async def test_a_carrier_opt_out_reported_by_status_callback_marks_the_number(world, fake_llm):
    fake_llm.script(LLMReply(content="Sure."))
    await world.text("hi")
    await world.idle()
    row = await world.last_outbox()
    await world.status(row["id"], "failed", error="21610")
    identity = await world.app.identities.get("sms", ALICE)
    assert identity is not None and identity.opted_out_at is not None


# --- STOP, START, HELP: never the LLM ----------------------------------------------------------


async def test_stop_opts_out_then_a_proactive_message_is_not_sent_and_start_sends_again(
        world, fake_llm):
    fake_llm.script(LLMReply(content="Hi!"))
    await world.text("hello")
    await world.idle()
    me = await alice(world)
    assert (await world.text("Stop")).status == 200
    await world.idle()
    identity = await world.app.identities.get("sms", ALICE)
    assert identity.opted_out_at is not None
    # Routing skips an opted-out number: nothing is even queued for it.
    assert not await world.app.outbound.notify_user(me, "Reminder: dentist at 3pm.",
                                                   dedupe_key="r1")
    await world.idle()
    assert world.replies() == ["Hi!"]  # nothing after STOP
    row = await world.last_outbox()
    assert row["text"] == "Hi!"
    # While opted out, other texts reach nobody (Twilio would refuse the reply anyway).
    await world.text("are you there?")
    await world.text("START")
    await world.idle()
    assert (await world.app.identities.get("sms", ALICE)).opted_out_at is None
    await world.app.outbound.notify_user(me, "Reminder: dentist at 4pm.", dedupe_key="r2")
    await world.idle()
    assert world.replies() == ["Hi!", "Reminder: dentist at 4pm."]
    assert len(fake_llm.requests) == 1  # STOP, the text while out, START: no LLM


@pytest.mark.parametrize("word", ["STOPALL", "unsubscribe", "Cancel", "END", "quit."])
async def test_stop_synonyms_opt_out_too(world, word, fake_llm):
    await world.app.identities.create_user("sms", ALICE, display_name="Alice",
                                           default_timezone="UTC", at=world.app.clock.now())
    await world.text(word)
    await world.idle()
    assert (await world.app.identities.get("sms", ALICE)).opted_out_at is not None
    assert fake_llm.requests == [] and world.twilio.sent == []


async def test_help_gets_a_short_help_text_without_the_llm_once_per_message(world, fake_llm):
    fake_llm.script(LLMReply(content="Hi!"))
    await world.text("hello")
    await world.idle()
    sid = new_sid()
    await world.text("HELP", sid=sid)
    await world.text("HELP", sid=sid)  # Twilio retried
    await world.idle()
    help_text = world.replies()[1:]
    assert len(help_text) == 1 and "Reply STOP" in help_text[0] and len(help_text[0]) <= 160
    assert len(fake_llm.requests) == 1


# --- MMS ---------------------------------------------------------------------------------------


async def test_a_picture_alone_gets_one_polite_sentence_without_the_llm(world, fake_llm):
    fake_llm.script(LLMReply(content="Hi!"))
    await world.text("hello")
    await world.idle()
    await world.text("", media=["https://api.twilio.com/media/ME1"])
    await world.idle()
    assert world.replies()[1].startswith("I can't open pictures")
    assert len(fake_llm.requests) == 1


async def test_a_picture_with_text_is_answered_and_the_picture_mentioned_once(world, fake_llm):
    fake_llm.script(LLMReply(content="Hi!"), LLMReply(content="That looks like a receipt."))
    await world.text("hello")
    await world.idle()
    sid = new_sid()
    await world.text("what is this?", sid=sid, media=["https://api.twilio.com/media/ME2"])
    await world.text("what is this?", sid=sid, media=["https://api.twilio.com/media/ME2"])
    await world.idle()
    assert world.replies()[1:] == [
        "I can't open pictures or attachments by text message yet, so I only read your text.",
        "That looks like a receipt."]


# --- access --------------------------------------------------------------------------------


async def test_an_unknown_number_gets_one_pairing_reply_and_no_llm_call(app_factory, fake_llm):
    world, close = await sms_world(app_factory, allow=(), policy="pairing")
    try:
        stranger = "+13125550188"
        await world.text("hi, who is this?", sender=stranger)
        await world.text("hello??", sender=stranger)
        await world.idle()
        [reply] = world.replies(stranger)
        assert "approve code" in reply
        assert fake_llm.requests == []
    finally:
        await close()


async def test_link_code_joins_the_number_with_the_same_persons_telegram_account(
        app_factory, fake_llm):
    # A French number: the operator allowed France (sms.allowed_countries).
    world, close = await sms_world(app_factory, allow=(), policy="allowlist", sms=SmsSettings(
        from_number=FROM_NUMBER, allowed_countries=["US", "FR"]))
    try:
        app = world.app
        now = app.clock.now()
        person = await app.identities.create_user("telegram", "4242", display_name="Bo",
                                                  default_timezone="Europe/Paris", at=now)
        code = await app.identities.issue_link_code(person.id, at=now)
        await world.text(f"link {code.lower()}", sender="+33612345678")
        await world.idle()
        assert (await app.identities.resolve("sms", "+33612345678")).id == person.id
        assert world.replies("+33612345678") == ["Linked. I'll know you here too from now on."]
        assert fake_llm.requests == []
        # Said in the language of whom it links (Spanish here; plain letters by SMS).
        await app.users.set_language(person.id, "es", now)
        code = await app.identities.issue_link_code(person.id, at=now)
        await world.text(f"link {code}", sender="+33612345679")
        await world.idle()
        assert world.replies("+33612345679") == [
            "Vinculado. A partir de ahora también te reconoceré aqui."]  # é is GSM-7, í is not
    finally:
        await close()


async def test_on_sqlite_and_postgres_a_retried_text_is_answered_once_and_reported(
        db_url, app_factory, fake_llm):  # db_url first: torn down after the apps close
    world, close = await sms_world(app_factory, database_url=db_url)
    try:
        fake_llm.responder = lambda request: LLMReply(content="Got it.")
        sid = new_sid()
        await asyncio.gather(*[world.text("remember the milk", sid=sid) for _ in range(3)])
        await world.idle()
        assert world.replies() == ["Got it."] and len(fake_llm.requests) == 1
        row = await world.last_outbox()
        await world.status(row["id"], "delivered")
        await world.status(row["id"], "sent")  # late and less final: ignored
        row = await world.outbox_row(row["id"])
        assert (row["delivery_status"], row["segments"], row["encoding"]) == \
            ("delivered", 1, "GSM-7")
        await world.text("STOP")
        assert (await world.app.identities.get("sms", ALICE)).opted_out_at is not None
        me = await alice(world)
        assert await SmsStore(world.app.db).segments_since(
            me.id, world.app.clock.now().replace(day=1, hour=0)) == 1
    finally:
        await close()


async def test_users_show_prints_the_sms_segments_sent_this_month(world, fake_llm):
    fake_llm.script(LLMReply(content="a" * 200), LLMReply(content="Short."))
    await world.text("first")
    await world.text("second")
    await world.idle()
    said: list[str] = []
    assert await _users(world.app, Namespace(action="show", user=f"sms:{ALICE}"),
                        said.append) == 0
    assert "sms segments this month: 3" in said[0]  # 200 GSM-7 characters: 2, then 1


async def test_link_alone_asks_for_a_code_to_use_on_telegram(world, fake_llm):
    await world.app.identities.create_user("sms", ALICE, display_name="Alice",
                                           default_timezone="UTC", at=world.app.clock.now())
    await world.text("LINK")
    await world.idle()
    [reply] = world.replies()
    assert reply.startswith("Your link code is ") and fake_llm.requests == []


async def test_stop_from_an_unknown_number_is_recorded_and_answers_nothing(world, fake_llm):
    await world.text("STOP", sender="+442079460000")
    await world.text("HELP", sender="+442079460000")  # the access policy: allowlist, silence
    await world.idle()
    assert world.twilio.sent == [] and fake_llm.requests == []
    assert await world.inbox_rows() == 2


async def test_sms_without_credentials_or_public_url_is_a_clear_configuration_error(
        app_factory):
    from bot.app.channels import served_channel
    from bot.config import ConfigError

    app = await app_factory()
    with pytest.raises(ConfigError) as err:
        served_channel(app, "sms", env={"VALET_TWILIO_AUTH_TOKEN": "secret-token"})
    message = str(err.value)
    assert "VALET_TWILIO_ACCOUNT_SID" in message and "VALET_PUBLIC_URL" in message
    assert "sms.from_number" in message and "secret-token" not in message


async def test_a_chunked_body_over_the_limit_is_refused_too(world):
    async def chunks():
        for _ in range(80):
            yield b"Body=" + b"x" * 1000 + b"&"

    response = await world.http.post(world.url("/sms/inbound"), data=chunks(),
                                     headers={"X-Twilio-Signature": "c2ln"})
    assert response.status == 413
    assert await world.inbox_rows() == 0


async def test_the_morning_summary_by_sms_fits_two_segments_and_is_counted(app_factory,
                                                                              fake_llm):
    from datetime import UTC, datetime

    from bot.contracts.clock import FakeClock
    from triggers.service import Owner

    clock = FakeClock(datetime(2026, 1, 5, 12, 29, tzinfo=UTC))  # 07:29 in New York
    world, close = await sms_world(app_factory, clock=clock,
                                   tools={"weather": {"enabled": False}})
    try:
        fake_llm.script(LLMReply(content="Hello!"))
        await world.text("hi")  # Alice becomes a user on SMS
        await world.idle()
        user = await alice(world)
        await world.app.triggers.service.morning_summary(Owner(user.id, "America/New_York"),
                                                         "every day at 7:30")
        summary = ("Good morning! Today: dentist at 10:00, lunch with Ana at 13:00. "
                   "Reminders: call mom at 15:00, pay rent. To-dos: buy oat milk. One email "
                   "to the landlord waits for your OK. Have a good day!")
        fake_llm.script(LLMReply(content=summary))
        clock.advance(60)
        await world.app.triggers.engine.tick()
        await world.idle()
        await world.app.triggers.engine.tick()  # the same minute again: nothing more
        await world.idle()
        asked = said(fake_llm.requests[-1]["messages"][-1]["content"])
        assert "at most 300 characters" in asked and "one or two SMS" in asked
        assert [m.body for m in world.twilio.sent if m.to == ALICE][-1] == summary
        assert sum(m.body == summary for m in world.twilio.sent) == 1
        row = await world.last_outbox()
        assert (row["segments"], row["encoding"]) == (2, "GSM-7")
    finally:
        await close()


async def test_a_reminder_set_by_sms_by_someone_also_on_telegram_comes_back_by_sms_in_gsm7(
        app_factory, fake_llm):
    from datetime import UTC, datetime

    from bot.contracts.clock import FakeClock
    from tests.helpers import RecordingSender

    clock = FakeClock(datetime(2026, 1, 5, 14, tzinfo=UTC))
    world, close = await sms_world(app_factory, clock=clock)
    try:
        telegram = RecordingSender("telegram")
        world.app.add_channel(telegram)
        app = world.app
        # Alice met Valet on Telegram first, then linked her phone; she chose no channel.
        ana = await app.identities.create_user("telegram", "555", display_name="Alice",
                                               default_timezone="UTC", at=clock.now())
        await app.identities.link("sms", ALICE, ana.id, at=clock.now())
        fake_llm.script(LLMReply(tool_calls=[ToolCall("draft_reminder", {
            "what": "stretch your legs", "when": "in 5 minutes"})]),
            LLMReply(content="I'll remind you at 14:05."))
        await world.text("remind me in 5 minutes to stretch my legs")
        await world.idle()
        clock.advance(minutes=5)
        await app.triggers.engine.tick()
        await world.idle()
        assert telegram.sent == []  # not where she met Valet: where she asked
        reminder = [m for m in world.twilio.sent if m.to == ALICE][-1]
        assert reminder.body.endswith("Reminder: stretch your legs") and is_gsm(reminder.body)
        row = await world.last_outbox()
        assert (row["segments"], row["encoding"]) == (1, "GSM-7")
        # Had she chosen Telegram, it would go there.
        await app.users.set_preferred_channel(ana.id, "telegram")
        fake_llm.script(LLMReply(tool_calls=[ToolCall("draft_reminder", {
            "what": "drink water", "when": "in 5 minutes"})]), LLMReply(content="Will do."))
        await world.text("remind me in 5 minutes to drink water")
        await world.idle()
        clock.advance(minutes=5)
        await app.triggers.engine.tick()
        await world.idle()
        assert [text for _, text in telegram.sent] == ["⏰ Reminder: drink water"]
    finally:
        await close()


async def test_a_morning_summary_too_long_for_two_sms_is_shortened_then_cut_at_a_sentence(
        app_factory, fake_llm):
    from datetime import UTC, datetime

    from bot.contracts.clock import FakeClock
    from triggers.service import Owner

    clock = FakeClock(datetime(2026, 1, 5, 12, 29, tzinfo=UTC))  # 07:29 in New York
    world, close = await sms_world(app_factory, clock=clock,
                                   tools={"weather": {"enabled": False}})
    try:
        fake_llm.script(LLMReply(content="Hello!"))
        await world.text("hi")
        await world.idle()
        user = await alice(world)
        await world.app.triggers.service.morning_summary(Owner(user.id, "America/New_York"))
        sentences = [f"Item {i}: something on your calendar at {8 + i % 9}:00 today." for i in
                     range(18)]
        long = " ".join(sentences)  # about 900 characters: six segments or so
        shorter = " ".join(sentences[:9])  # the shortening pass: still too long
        assert len(long) > 850 and len(shorter) > 306
        fake_llm.script(LLMReply(content=long), LLMReply(content=shorter))
        clock.advance(60)
        await world.app.triggers.engine.tick()
        await world.idle()
        asked = fake_llm.requests[-1]["messages"]
        assert "Shorten this message" in asked[0]["content"] and asked[1]["content"] == long
        [summary] = [m.body for m in world.twilio.sent if m.to == ALICE and m.body != "Hello!"]
        assert summary.endswith("today.") and shorter.startswith(summary)  # whole sentences
        row = await world.last_outbox()
        assert row["segments"] <= 2 and row["encoding"] == "GSM-7"
        # What the history keeps is what was sent.
        assert (await world.app.history.load(user.id))[-1]["content"] == summary
    finally:
        await close()
