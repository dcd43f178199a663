"""A pairing request reaches the owner as a prompt of its own kind: answered with "1" or "2"
by SMS it lets the stranger in or refuses them, no LLM involved, and nothing reads it as an
approval."""

from __future__ import annotations

import pytest

from bot.config import OwnerSettings
from tests.integration.sms_harness import SmsWorld, sms_world

SAM = "+12125550123"
STRANGER = "+13125550177"  # a country Valet may text (the owner's)


@pytest.fixture
async def world(app_factory):
    world, close = await sms_world(app_factory, allow=(), policy="pairing",
                                   owner=OwnerSettings(name="Sam", phone_numbers=[SAM]))
    yield world
    await close()


async def pairing_notice(world: SmsWorld) -> str:
    await world.text("hi, who is this?", sender=STRANGER)
    await world.idle()
    notice = world.replies(SAM)[-1]
    assert "Reply 1 to let, 2 to cancel." in notice
    return notice


async def test_the_owner_lets_a_stranger_in_with_1(world, fake_llm):
    await pairing_notice(world)
    await world.text("1", sender=SAM)
    await world.idle()
    assert world.replies(SAM)[-1].startswith("Approved ")
    # A stranger by SMS has no name: they are named by their number, never an internal id.
    assert world.replies(SAM)[-1].endswith(f": {STRANGER} can talk to me now.")
    assert "u_" not in world.replies(SAM)[-1]
    assert await world.app.identities.resolve("sms", STRANGER) is not None
    assert any("You're in" in reply for reply in world.replies(STRANGER))
    assert fake_llm.requests == []


async def test_the_owner_refuses_a_stranger_with_2(world, fake_llm):
    await pairing_notice(world)
    await world.text("2", sender=SAM)
    await world.idle()
    assert world.replies(SAM)[-1].startswith("Denied ")
    assert await world.app.identities.resolve("sms", STRANGER) is None
    assert fake_llm.requests == []
