"""WhatsApp through the fake Twilio, over real HTTP: a chat, the person's profile name, signed
webhooks, strangers kept from the LLM, media as on Telegram, delivery reports."""

from __future__ import annotations

import pytest

from tests.fakes.fake_openai import Reply as LLMReply
from tests.integration.whatsapp_harness import ALICE, FROM_NUMBER, whatsapp_world

BOB = "+12125550199"


@pytest.fixture
async def world(app_factory):
    world, close = await whatsapp_world(app_factory)
    yield world
    await close()


async def known(world, fake_llm) -> None:
    """The person has written before (media from a sender Valet does not know yet go to the
    access policy only, as on Telegram)."""
    fake_llm.script(LLMReply(content="Hi."))
    await world.write("hi")
    await world.idle()


async def test_a_person_chats_and_the_reply_comes_back_on_whatsapp(world, fake_llm):
    fake_llm.script(LLMReply(content="Hello **Alice**, how can I help?"))
    response = await world.write("hi there", profile_name="Alice Liddell")
    assert response.status == 200 and "<Response/>" in await response.text()
    await world.idle()
    [sent] = world.sent_to(ALICE)
    assert sent.from_ == "whatsapp:" + FROM_NUMBER
    assert sent.body == "Hello *Alice*, how can I help?"  # WhatsApp's own bold
    assert sent.status_callback.startswith("https://valet.example.com/whatsapp/status?outbox=")
    assert fake_llm.requests[-1]["messages"][-1]["content"].startswith("hi there")
    identity = await world.app.db.fetchrow(
        "SELECT display_name FROM identities WHERE channel = 'whatsapp' AND address = $1",
        ALICE)
    assert identity["display_name"] == "Alice Liddell"


async def test_a_forged_or_missing_signature_is_refused_and_touches_nothing(world, fake_llm):
    assert (await world.write("hi", signature="forged")).status == 403
    assert (await world.write("hi", signature="")).status == 403
    assert await world.app.db.fetchval("SELECT COUNT(*) FROM inbox") == 0
    assert fake_llm.requests == []


async def test_a_stranger_never_reaches_the_llm(app_factory, fake_llm):
    world, close = await whatsapp_world(app_factory, policy="pairing", allow=())
    try:
        await world.write("hello, who is this?", sender=BOB)
        await world.idle()
        assert fake_llm.requests == []
        row = await world.app.db.fetchrow("SELECT user_id, status FROM inbox")
        assert row["user_id"] is None
    finally:
        await close()


async def test_a_long_reply_is_cut_into_messages_twilio_takes(world, fake_llm):
    long = " ".join(f"Sentence number {i} is here." for i in range(200))
    fake_llm.script(LLMReply(content=long))
    await world.write("tell me everything")
    await world.idle()
    bodies = world.got()
    assert len(bodies) > 1 and all(len(b) <= 1600 for b in bodies)
    assert " ".join(bodies) == long


async def test_a_photo_is_seen_when_the_model_can_see(app_factory, app_settings, fake_llm):
    llm = app_settings().llm.model_copy(update={"vision": True})
    world, close = await whatsapp_world(app_factory, llm=llm)
    try:
        await known(world, fake_llm)
        url = world.twilio.whatsapp.add_media(b"\xff\xd8jpegbytes", "image/jpeg")
        fake_llm.script(LLMReply(content="A fine cat."))
        await world.write("what is this?", media=[(url, "image/jpeg")])
        await world.idle()
        content = fake_llm.requests[-1]["messages"][-1]["content"]
        assert isinstance(content, list)
        assert any(part.get("type") == "image_url" for part in content)
        assert world.got()[-1] == "A fine cat."
    finally:
        await close()


async def test_a_document_is_said_unreadable_and_its_caption_read(world, fake_llm):
    await known(world, fake_llm)
    url = world.twilio.whatsapp.add_media(b"%PDF-1.4", "application/pdf")
    fake_llm.script(LLMReply(content="Noted."))
    await world.write("my invoice", media=[(url, "application/pdf")])
    await world.idle()
    got = world.got()[1:]
    assert got[0] == "I can't open a document yet, so I've only read your caption."
    assert "my invoice" in fake_llm.requests[-1]["messages"][-1]["content"]
    assert got[-1] == "Noted."


async def test_a_delivery_report_is_kept_and_a_forged_one_refused(world, fake_llm):
    from tests.fakes.fake_twilio import post_signed
    from tests.integration.whatsapp_harness import AUTH_TOKEN, PUBLIC_URL

    fake_llm.script(LLMReply(content="Hi."))
    await world.write("hi")
    await world.idle()
    [sent] = world.sent_to(ALICE)
    outbox = int(sent.status_callback.split("outbox=")[1])
    path = f"/whatsapp/status?outbox={outbox}"
    params = {"MessageSid": sent.sid, "MessageStatus": "read", "To": "whatsapp:" + ALICE,
              "AccountSid": world.twilio.account_sid}
    forged = await post_signed(world.http, world.url(path), PUBLIC_URL + path, params,
                               AUTH_TOKEN, signature="nope")
    assert forged.status == 403
    answer = await post_signed(world.http, world.url(path), PUBLIC_URL + path, params,
                               AUTH_TOKEN)
    assert answer.status == 200
    status = await world.app.db.fetchval(
        "SELECT delivery_status FROM whatsapp_parts WHERE outbox_id = $1", outbox)
    assert status == "read"


async def test_each_message_is_priced_per_message_through_the_meter(world, fake_llm):
    long = " ".join(f"Sentence number {i} is here." for i in range(80))  # 2,209 characters
    fake_llm.script(LLMReply(content=long))
    await world.write("tell me a lot")
    await world.idle()
    parts = len(world.got())
    assert parts == 2
    row = await world.app.db.fetchrow(
        "SELECT parts, segments, messages_micros FROM meter_ledger WHERE channel = 'whatsapp'")
    # whatsapp.price_per_message (0.005 dollars) for each message, however long.
    assert (row["parts"], row["segments"], row["messages_micros"]) == (2, 2, 2 * 5000)


async def test_a_message_the_meter_did_not_let_out_is_never_sent(world):
    from bot.channel import PermanentSendError
    from bot.contracts.envelopes import OutboundMessage

    with pytest.raises(PermanentSendError, match="not let out by the meter"):
        await world.channel.sender.send(OutboundMessage(99, None, "whatsapp", ALICE, "Hi"))
    assert world.sent_to() == []


async def test_a_voice_note_without_a_transcription_model_and_a_sticker_get_one_line(
        world, fake_llm):
    await known(world, fake_llm)
    asked = len(fake_llm.requests)
    voice = world.twilio.whatsapp.add_media(b"OggS", "audio/ogg")
    await world.write("", media=[(voice, "audio/ogg")])
    sticker = world.twilio.whatsapp.add_media(b"RIFF", "image/webp")
    await world.write("", media=[(sticker, "image/webp")])
    await world.idle()
    assert world.got()[1:] == [
        "Sorry, I can't listen to voice notes yet: could you type it for me?",
        "I can't read a sticker yet: please write to me."]
    assert len(fake_llm.requests) == asked  # neither reached the model
