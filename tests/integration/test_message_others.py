"""Sam texts Valet "text Ana that I'm late": with two Anas Valet asks which; the approval card
shows who, where and the exact signed text; after "1" the SMS reaches Ana once through the
fake Twilio server, and a second "1" sends nothing; Ana's answer is a stranger's (pairing),
never part of Sam's conversation; a number that said STOP and the daily limit refuse it; a
Valet user linked on Telegram gets it in her Telegram chat."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bot.config.sections import ContactsSettings, OwnerSettings
from bot.contracts.approvals import ApprovalStatus
from bot.contracts.clock import FakeClock
from bot.contracts.tool_context import ToolExecutionContext
from tests.fakes.fake_openai import Reply, ToolCall
from tests.helpers import RecordingSender
from tests.integration.sms_harness import FROM_NUMBER, SmsWorld, sms_world

SAM = "+12125550123"
ANA_LOPEZ = "+12125550101"
ANA_RUIZ = "+12125550102"
NOON = datetime(2026, 5, 4, 16, tzinfo=UTC)
SIGNED = "I'm late — from Sam, via Valet"
SIGNED_GSM = "I'm late - from Sam, via Valet"  # as an SMS carries it (GSM-7: one segment)


@pytest.fixture
async def world(app_factory):
    world, close = await sms_world(
        app_factory, allow=(), policy="pairing", clock=FakeClock(NOON),
        owner=OwnerSettings(name="Sam", phone_numbers=[SAM]),
        contacts=ContactsSettings(max_messages_per_day=2))
    yield world
    await close()


async def sam_id(world: SmsWorld) -> str:
    user = await world.app.identities.resolve("sms", SAM)
    assert user is not None
    return user.id


async def two_anas(world: SmsWorld) -> dict[str, int]:
    contacts = world.app.services.stores.contacts
    me = await sam_id(world)
    lopez = await contacts.save(me, "Ana Lopez", {"phone": ANA_LOPEZ,
                                                  "relationship": "sister"}, NOON)
    ruiz = await contacts.save(me, "Ana Ruiz", {"phone": ANA_RUIZ,
                                                "relationship": "dentist"}, NOON)
    return {"lopez": lopez.contact.id, "ruiz": ruiz.contact.id}


async def sam_says(world: SmsWorld, text: str) -> str:
    await world.text(text, sender=SAM)
    await world.idle()
    return world.replies(SAM)[-1]


def tool_results(fake_llm) -> list[str]:  # type: ignore[no-untyped-def]
    return [m["content"] for m in fake_llm.requests[-1]["messages"] if m["role"] == "tool"]


async def approved_message(world: SmsWorld, fake_llm, to: str) -> str:  # type: ignore[no-untyped-def]
    """Sam asks, and the card that comes back."""
    fake_llm.script(Reply(tool_calls=[ToolCall("message_someone", {
        "to": to, "text": "I'm late"})]))
    return await sam_says(world, f"text {to} that I'm late")


async def test_two_anas_make_valet_ask_which_before_any_approval_then_one_sms_goes_once(
        world, fake_llm):
    await two_anas(world)
    fake_llm.script(Reply(tool_calls=[ToolCall("message_someone", {
        "to": "Ana", "text": "I'm late"})]),
        Reply(content="Which Ana: Ana Lopez (your sister) or Ana Ruiz (your dentist)?"))
    question = await sam_says(world, "text Ana that I'm late")
    assert question == "Which Ana: Ana Lopez (your sister) or Ana Ruiz (your dentist)?"
    [result] = tool_results(fake_llm)
    assert result.startswith("Error: Several contacts match 'Ana':")
    assert ANA_LOPEZ in result and ANA_RUIZ in result and "Nothing was sent." in result
    assert await world.app.approvals.store.list(None, None) == []  # no approval was opened

    card = await approved_message(world, fake_llm, "Ana Lopez")
    assert f"Send Ana Lopez an SMS from Valet's number to {ANA_LOPEZ}: \"{SIGNED_GSM}\"" in card
    [approval] = await world.app.approvals.store.list(None, None)
    assert approval.summary == \
        f"Send Ana Lopez an SMS from Valet's number to {ANA_LOPEZ}: “{SIGNED}”"
    assert world.replies(ANA_LOPEZ) == []  # nothing before the yes

    fake_llm.script(Reply(content="Sent."))
    assert await sam_says(world, "1") == "Sent."
    assert tool_results(fake_llm)[-1].startswith(  # queued, not yet known to be sent
        f"On its way to Ana Lopez (an SMS from Valet's number to {ANA_LOPEZ}): “{SIGNED}”")
    [sms] = [m for m in world.twilio.sent if m.to == ANA_LOPEZ]
    assert (sms.from_, sms.body) == (FROM_NUMBER, SIGNED_GSM)

    await world.text("1", sender=SAM)  # a second yes (or a redelivered one)
    await world.idle()
    world.app.outbound.deliverer.wake()
    await world.idle()
    # The approved call run again with its approval id (a crash redone): nothing more queued.
    [approval] = await world.app.approvals.store.list(None, None)
    deps = world.app.orchestrator.deps
    again = await deps.registry.get("message_someone").run_with_approval(
        approval.arguments, ToolExecutionContext(
            user_id=await sam_id(world), clock=world.app.clock,
            services=deps.tool_services, call_id=approval.id))
    assert again.content == "Already sent to Ana Lopez before; nothing was sent again."
    world.app.outbound.deliverer.wake()
    await world.idle()
    assert world.replies(ANA_LOPEZ) == [SIGNED_GSM]
    assert world.replies(ANA_RUIZ) == []


async def test_an_edited_message_is_shown_again_signed_and_sent_as_edited(world, fake_llm):
    await two_anas(world)
    await approved_message(world, fake_llm, "Ana Lopez")
    fake_llm.script(Reply(content='{"to": "Ana Lopez", "text": "I\'m 10 minutes late"}'))
    card = await sam_says(world, "change it to I'm 10 minutes late")  # the edit form
    assert "I'm 10 minutes late - from Sam, via Valet" in card
    fake_llm.script(Reply(content="Sent."))
    await sam_says(world, "1")
    assert world.replies(ANA_LOPEZ) == ["I'm 10 minutes late - from Sam, via Valet"]


async def test_anas_reply_gets_the_stranger_treatment_and_never_reaches_sams_conversation(
        world, fake_llm):
    await two_anas(world)
    await approved_message(world, fake_llm, "Ana Lopez")
    fake_llm.script(Reply(content="Sent."))
    await sam_says(world, "1")
    llm_calls = len(fake_llm.requests)

    await world.text("no worries, see you soon", sender=ANA_LOPEZ)
    await world.idle()
    [to_ana, pairing] = world.replies(ANA_LOPEZ)
    assert to_ana == SIGNED_GSM
    assert "approve code" in pairing  # the access policy, like any stranger
    assert len(fake_llm.requests) == llm_calls  # no turn ran for it
    said = [str(m.get("content")) for m in await world.app.history.load(await sam_id(world))]
    assert "text Ana Lopez that I'm late" in said  # Sam's own words are there
    assert not any("see you soon" in text for text in said)
    assert all("see you soon" not in reply for reply in world.replies(SAM))


async def test_a_number_that_replied_stop_is_refused_before_sam_is_asked(world, fake_llm):
    await two_anas(world)
    await world.text("STOP", sender=ANA_RUIZ)  # Ana Ruiz is nobody's identity
    await world.idle()
    fake_llm.script(Reply(tool_calls=[ToolCall("message_someone", {
        "to": "my dentist", "text": "I'm late"})]), Reply(content="She opted out."))
    assert await sam_says(world, "text my dentist that I'm late") == "She opted out."
    assert tool_results(fake_llm)[-1] == (
        f"Error: Ana Ruiz ({ANA_RUIZ}) has replied STOP to Valet's messages. Nothing was sent.")
    assert await world.app.approvals.store.list(None, None) == []
    assert world.replies(ANA_RUIZ) == []


async def test_an_opt_out_between_the_card_and_the_yes_still_stops_it(world, fake_llm):
    await two_anas(world)
    await approved_message(world, fake_llm, "Ana Lopez")
    await world.text("stop", sender=ANA_LOPEZ)
    await world.idle()
    fake_llm.script(Reply(content="Not sent."))
    reply = await sam_says(world, "1")
    # Refused, not "Done": the SMS reply says so (SMS cannot edit the card), as does the
    # result the model reads and the approval's record.
    assert reply.startswith(f"Refused: Send Ana Lopez an SMS from Valet's number to {ANA_LOPEZ}")
    assert reply.endswith("Not sent.")
    assert tool_results(fake_llm)[-1] == (
        "Refused: Ana Lopez (+12125550101) has replied STOP to Valet's messages. Nothing was "
        "sent.")
    [approval] = await world.app.approvals.store.list(None, None)
    assert approval.status is ApprovalStatus.REFUSED
    assert world.replies(ANA_LOPEZ) == []


async def test_the_daily_limit_refuses_the_next_message_with_a_clear_reason(world, fake_llm):
    await two_anas(world)
    for to in ("Ana Lopez", "Ana Ruiz"):  # the limit here is 2 a day
        await approved_message(world, fake_llm, to)
        fake_llm.script(Reply(content="Sent."))
        await sam_says(world, "1")
    fake_llm.script(Reply(tool_calls=[ToolCall("message_someone", {
        "to": "Ana Lopez", "text": "really late now"})]), Reply(content="That's the limit."))
    await sam_says(world, "text Ana Lopez that I'm really late now")
    assert tool_results(fake_llm)[-1] == (
        "Error: the user has sent 2 messages to other people in the last 24 hours, the most "
        "allowed (2). Nothing was sent; try again later.")
    assert len(world.replies(ANA_LOPEZ)) == 1 and len(world.replies(ANA_RUIZ)) == 1
    world.app.clock.advance(24 * 3600 + 1)  # a day later there is room again
    card = await approved_message(world, fake_llm, "Ana Lopez")
    assert "Send Ana Lopez an SMS" in card


async def test_an_ana_who_uses_valet_on_telegram_gets_it_in_her_telegram_chat(
        world, fake_llm):
    telegram = RecordingSender("telegram")
    world.app.add_channel(telegram)
    app = world.app
    ana = await app.identities.create_user("telegram", "70001", display_name="Ana",
                                           default_timezone="UTC", at=NOON)
    await app.identities.link("sms", ANA_LOPEZ, ana.id, at=NOON)  # her number is hers too
    await app.services.stores.contacts.save(
        await sam_id(world), "Ana Lopez", {"phone": ANA_LOPEZ}, NOON)
    card = await approved_message(world, fake_llm, "Ana Lopez")
    assert f"Send Ana Lopez a Telegram message: \"{SIGNED_GSM}\"" in card  # Sam is on SMS
    fake_llm.script(Reply(content="Sent."))
    await sam_says(world, "1")
    assert telegram.sent == [("70001", SIGNED)]
    assert world.replies(ANA_LOPEZ) == []  # not by SMS as well
    row = await app.db.fetchrow("SELECT * FROM outbox WHERE channel = 'telegram'")
    assert row is not None and row["user_id"] == await sam_id(world)
    assert row["dedupe_key"].startswith("others:")


async def test_the_name_a_person_gives_signs_what_valet_sends_for_them(world, fake_llm):
    await two_anas(world)
    me = await sam_id(world)
    await world.app.users.set_display_name(me, "")  # a number nobody has named yet
    fake_llm.script(Reply(tool_calls=[ToolCall("set_my_name", {"name": "  Samuel   Ortiz "})]),
                    Reply(content="Nice to meet you, Samuel."))
    await sam_says(world, "call me Samuel Ortiz")
    assert tool_results(fake_llm) == ["Name set: Samuel Ortiz."]
    card = await approved_message(world, fake_llm, "Ana Lopez")
    assert "I'm late - from Samuel Ortiz, via Valet" in card


async def test_a_message_to_a_valet_user_in_their_quiet_hours_waits_until_they_end(
        world, fake_llm):
    telegram = RecordingSender("telegram")
    world.app.add_channel(telegram)
    app = world.app
    ana = await app.identities.create_user("telegram", "70001", display_name="Ana",
                                           default_timezone="America/New_York", at=NOON)
    # NOON is 12:00 in New York (EDT): inside Ana's 11:30-14:00 (a nap, say).
    await app.users.set_quiet_hours(ana.id, "11:30", "14:00")
    await app.identities.link("sms", ANA_LOPEZ, ana.id, at=NOON)
    await app.services.stores.contacts.save(
        await sam_id(world), "Ana Lopez", {"phone": ANA_LOPEZ}, NOON)
    await approved_message(world, fake_llm, "Ana Lopez")
    fake_llm.script(Reply(content="It will go at 9."))
    await sam_says(world, "1")
    assert telegram.sent == []  # held: nothing inside her quiet hours
    result = tool_results(fake_llm)[-1]
    assert result.startswith("Queued for Ana Lopez") and "quiet hours end" in result
    row = await app.db.fetchrow("SELECT * FROM outbox WHERE channel = 'telegram'")
    assert row["status"] == "pending"
    assert row["next_attempt_at"] == datetime(2026, 5, 4, 18, tzinfo=UTC)  # 14:00 in New York
