"""What an SMS may cost: held to sms.max_segments with MORE for the rest (a notification to
the larger of that and the summary's own limit), the persona's words for MORE, nothing to a
country not allowed whatever asked for it, and each part's price on the person's day."""

from __future__ import annotations

import pytest

from bot.channel import PermanentSendError
from bot.config.channel_sections import SmsSettings
from bot.contracts.envelopes import Notification, OutboundMessage, Urgency
from tests.fakes.fake_openai import Reply as LLMReply
from tests.integration.sms_harness import ALICE, FROM_NUMBER, sms_world

LONG = " ".join(f"Point {i:03d} is one more thing worth knowing today." for i in range(40))


@pytest.fixture
async def world(app_factory):
    world, close = await sms_world(app_factory, sms=SmsSettings(
        from_number=FROM_NUMBER, max_segments=2, summary_max_segments=4,
        price_per_segment={"default": 0.01, "US": 0.02}))
    yield world
    await close()


async def alice_id(world) -> str:
    user = await world.app.identities.resolve("sms", ALICE)
    assert user is not None
    return user.id


async def test_a_reply_and_a_notification_are_held_to_max_segments_whatever_the_summary_limit(
        world, fake_llm):
    """sms.max_segments is the cap for every SMS (issue 44): a notification too, even where
    sms.summary_max_segments (what a triggered summary is shortened for) is larger."""
    fake_llm.script(LLMReply(content=LONG), LLMReply(content=LONG))
    await world.text("tell me all")
    await world.idle()
    [reply] = world.twilio.sent
    assert reply.segments <= 2 and reply.body.endswith("(reply MORE for the rest)")
    await world.app.outbound.notify(Notification(await alice_id(world), LONG, "n1",
                                                 urgency=Urgency.URGENT))
    await world.idle()
    notice = world.twilio.sent[-1]
    assert notice.segments <= 2  # the cap has no exception
    assert notice.body.endswith("(reply MORE for the rest)")


async def test_more_and_the_persona_s_words_send_the_rest_part_by_part(world, fake_llm):
    fake_llm.script(LLMReply(content=LONG), LLMReply(content=LONG))
    await world.text("tell me all")
    await world.idle()
    calls = fake_llm.calls
    words = ["Go on.", "continue", "MORE", "more!"]
    while world.replies()[-1].endswith("(reply MORE for the rest)"):
        assert len(world.replies()) < 20
        await world.text(words[len(world.replies()) % len(words)])
        await world.idle()
    assert fake_llm.calls == calls
    parts = [b.removesuffix(" (reply MORE for the rest)") for b in world.replies()]
    assert " ".join(parts) == LONG  # the whole answer, once, in order
    assert all(m.segments <= 2 for m in world.twilio.sent)
    fake_llm.script(LLMReply(content="Nothing more to say."))
    await world.text("more")  # nothing waits: it is a message like any other
    await world.idle()
    assert world.replies()[-1] == "Nothing more to say." and fake_llm.calls == calls + 1


async def test_no_sms_goes_to_a_country_not_allowed_and_the_number_is_marked(world):
    with pytest.raises(PermanentSendError) as refused:
        await world.send(OutboundMessage(1, None, "sms", "+447700900123", "hi"))
    assert refused.value.unreachable and "allowed_countries" in str(refused.value)
    now = world.app.clock.now()
    user = await world.app.identities.create_user("sms", "+447700900124", display_name="Ann",
                                                  default_timezone="UTC", at=now)
    await world.app.outbound.notify(Notification(user.id, "hello", "n2",
                                                 urgency=Urgency.URGENT))
    await world.idle()
    assert world.twilio.sent == []
    [identity] = await world.app.identities.of_user(user.id)
    assert identity.unreachable_at is not None  # reminders go elsewhere, or wait


async def test_each_part_costs_its_country_s_price_on_the_person_s_day(world, fake_llm):
    fake_llm.script(LLMReply(content="Short answer."))
    await world.text("hi")
    await world.idle()
    day = await world.app.budget.spending.day(await alice_id(world), "2026-01-05")
    assert day.messages == 20_000  # one segment at the US price, $0.02
