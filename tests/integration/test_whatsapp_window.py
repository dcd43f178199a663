"""The 24-hour window on WhatsApp: what Valet sends first outside it goes as the approved
template for its kind, else to the person's other channel with a line saying why; Twilio's
63016 ("outside the allowed window", in the status callback) is never a silent loss."""

from __future__ import annotations

import pytest

from bot.channel import ChannelSender
from bot.contracts.channels import ChannelTraits
from bot.contracts.envelopes import Notification, OutboundMessage, Urgency
from tests.fakes.fake_openai import Reply as LLMReply
from tests.fakes.fake_twilio import FakeTwilio
from tests.helpers import until
from tests.integration.whatsapp_harness import ACCOUNT_SID, ALICE, AUTH_TOKEN, whatsapp_world

TELEGRAM_CHAT = "424242"


class RecordingSender(ChannelSender):
    """Another channel of the person's (what reaches them there)."""

    traits = ChannelTraits("telegram", "Telegram")

    def __init__(self) -> None:
        self.sent: list[OutboundMessage] = []

    async def send(self, message: OutboundMessage) -> str | None:
        self.sent.append(message)
        return str(len(self.sent))


async def start(app_factory, fake_llm, *, templates: dict[str, str] | None = None,
                other_channel: bool = True):
    twilio = await FakeTwilio(ACCOUNT_SID, AUTH_TOKEN).__aenter__()
    made = {kind: twilio.whatsapp.add_template(body) for kind, body in (templates or {}).items()}
    world, close = await whatsapp_world(app_factory, templates=made, twilio=twilio)
    fake_llm.script(LLMReply(content="Hi Alice."))
    await world.write("hi")
    await world.idle()
    user_id = await world.app.db.fetchval(
        "SELECT user_id FROM identities WHERE channel = 'whatsapp' AND address = $1", ALICE)
    telegram = RecordingSender()
    if other_channel:
        world.app.add_channel(telegram)
        await world.app.identities.link("telegram", TELEGRAM_CHAT, user_id,
                                        at=world.app.clock.now())
    return world, close, user_id, made, telegram


async def notify(world, user_id: str, text: str, key: str) -> None:
    await world.app.outbound.notify(Notification(user_id, text, dedupe_key=key,
                                                 channel="whatsapp", urgency=Urgency.URGENT))


async def test_a_reminder_outside_the_window_goes_as_its_template(app_factory, fake_llm):
    world, close, user_id, made, telegram = await start(
        app_factory, fake_llm, templates={"reminder": "Valet reminds you: {{1}}"})
    try:
        world.app.clock.advance(hours=25)
        world.twilio.whatsapp.close_window(ALICE)
        await notify(world, user_id, "⏰ Reminder: call mum", "task:7:2026-01-06T09:00")
        await until(lambda: len(world.got()) == 2, "the reminder on WhatsApp")
        [_, reminder] = world.sent_to()
        assert reminder.content_sid == made["reminder"]
        assert reminder.body == "Valet reminds you: ⏰ Reminder: call mum"
        assert telegram.sent == []
    finally:
        await close()


async def test_without_a_template_it_goes_to_the_other_channel_saying_why(app_factory,
                                                                           fake_llm):
    world, close, user_id, _made, telegram = await start(app_factory, fake_llm)
    try:
        world.app.clock.advance(hours=25)
        await notify(world, user_id, "⏰ Reminder: call mum", "task:7:2026-01-06T09:00")
        await until(lambda: telegram.sent, "the reminder on Telegram")
        [moved] = telegram.sent
        assert moved.address == TELEGRAM_CHAT
        assert moved.text == ("(WhatsApp lets me write to you first only within 24 hours of "
                              "your last message there, so this comes here.)\n\n"
                              "⏰ Reminder: call mum")
        assert len(world.sent_to()) == 1  # nothing more was tried on WhatsApp
        row = await world.app.db.fetchrow(
            "SELECT status, channel_message_id FROM outbox WHERE channel = 'whatsapp'"
            " ORDER BY id DESC LIMIT 1")
        assert (row["status"], row["channel_message_id"]) == ("sent", "elsewhere:telegram")
    finally:
        await close()


async def test_with_no_template_and_no_other_channel_it_is_dead_with_its_reason(
        app_factory, fake_llm):
    world, close, user_id, _made, _telegram = await start(app_factory, fake_llm,
                                                        other_channel=False)
    try:
        world.app.clock.advance(hours=25)
        await notify(world, user_id, "⏰ Reminder: call mum", "task:7:2026-01-06T09:00")

        async def dead() -> bool:
            return await world.app.db.fetchval(
                "SELECT COUNT(*) FROM outbox WHERE status = 'dead'") == 1

        await until(dead, "the reminder dead-lettered")
        error = await world.app.db.fetchval("SELECT last_error FROM outbox WHERE status = 'dead'")
        assert "whatsapp.templates.reminder" in error and "no other channel" in error
    finally:
        await close()


async def test_a_63016_in_the_status_callback_sends_it_again_by_template(app_factory,
                                                                          fake_llm):
    world, close, user_id, made, _telegram = await start(
        app_factory, fake_llm, templates={"notice": "A message from Valet: {{1}}"})
    try:
        world.twilio.whatsapp.close_window(ALICE)  # Twilio's clock says closed; Valet's not
        await notify(world, user_id, "Your export is ready.", "export:1")
        await until(lambda: len(world.got()) == 2, "the notice again, by template")
        [report] = world.twilio.whatsapp.reports
        assert report.params["ErrorCode"] == "63016" and report.status == 200
        [_, refused, again] = world.sent_to()
        assert refused.sid in world.twilio.whatsapp.undelivered and refused.body == \
            "Your export is ready."
        assert again.content_sid == made["notice"]
        assert again.body == "A message from Valet: Your export is ready."
        closed = await world.app.db.fetchval(
            "SELECT closed_at FROM whatsapp_windows WHERE address = $1", ALICE)
        assert closed is not None
    finally:
        await close()


async def test_a_63016_without_a_template_goes_to_the_other_channel(app_factory, fake_llm):
    world, close, user_id, _made, telegram = await start(app_factory, fake_llm)
    try:
        world.twilio.whatsapp.close_window(ALICE)
        await notify(world, user_id, "Your export is ready.", "export:1")
        await until(lambda: telegram.sent, "the notice on Telegram")
        assert telegram.sent[0].text.endswith("\n\nYour export is ready.")
        # The next message goes straight there: the window is closed until Alice writes.
        await notify(world, user_id, "And another thing.", "export:2")
        await until(lambda: len(telegram.sent) == 2, "the next notice on Telegram")
        assert len(world.sent_to()) == 2
    finally:
        await close()


async def test_a_63016_with_nowhere_else_to_go_leaves_the_row_dead_with_why(app_factory,
                                                                            fake_llm):
    """Twilio took the notice, then said 63016; no template, no other channel: the row it had
    recorded as sent is dead with the reason, where the console's dead letters show it."""
    world, close, user_id, _made, _telegram = await start(app_factory, fake_llm,
                                                        other_channel=False)
    try:
        world.twilio.whatsapp.close_window(ALICE)
        await notify(world, user_id, "Your export is ready.", "export:1")

        async def dead() -> bool:
            return await world.app.db.fetchval(
                "SELECT status FROM outbox WHERE dedupe_key = 'export:1'") == "dead"

        await until(dead, "the refused notice dead-lettered")
        error = await world.app.db.fetchval(
            "SELECT last_error FROM outbox WHERE dedupe_key = 'export:1'")
        assert "63016" in error and "no other channel reaches the person" in error
        assert len(world.sent_to()) == 2  # the greeting, and the notice Twilio refused later
    finally:
        await close()


@pytest.mark.parametrize("hours", [23])
async def test_inside_the_window_a_notice_goes_as_text(app_factory, fake_llm, hours):
    world, close, user_id, _made, _telegram = await start(
        app_factory, fake_llm, templates={"notice": "A message from Valet: {{1}}"})
    try:
        world.app.clock.advance(hours=hours)
        await notify(world, user_id, "Your export is ready.", "export:1")
        await until(lambda: len(world.got()) == 2, "the notice as text")
        assert world.sent_to()[-1].content_sid is None
        assert world.got()[-1] == "Your export is ready."
    finally:
        await close()


async def test_a_63016_in_twilio_s_answer_sends_it_by_template_at_once(app_factory, fake_llm):
    world, close, user_id, made, _telegram = await start(
        app_factory, fake_llm, templates={"notice": "A message from Valet: {{1}}"})
    try:
        world.twilio.whatsapp.close_window(ALICE)
        world.twilio.whatsapp.refuse_at_once = True
        await notify(world, user_id, "Your export is ready.", "export:1")
        await until(lambda: len(world.got()) == 2, "the notice, by template")
        assert world.sent_to()[-1].content_sid == made["notice"]
        assert world.got()[-1] == "A message from Valet: Your export is ready."
        row = await world.app.db.fetchrow(
            "SELECT status FROM outbox WHERE dedupe_key = 'export:1'")
        assert row["status"] == "sent"
    finally:
        await close()
