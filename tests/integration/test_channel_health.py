"""Health that tells the truth: when Twilio rejects Valet's credentials (error 20003), SMS is
down — `/readyz` answers 503 naming it, the owner is told once on Telegram, and the replies
wait in the outbox (never dead-lettered) until the account works again, then go out in order.
"""

from __future__ import annotations

from aiohttp.test_utils import TestClient, TestServer

from bot.app.serve import build_web_app
from bot.config.policies import DeliveryPolicy
from bot.config.sections import OwnerSettings
from tests.fakes.fake_openai import Reply as LLMReply
from tests.helpers import RecordingSender, until
from tests.integration.sms_harness import ALICE, sms_world

OWNER_PHONE = ALICE


async def test_rejected_credentials_make_sms_down_and_its_replies_wait(app_factory, fake_llm):
    world, close = await sms_world(
        app_factory, owner=OwnerSettings(name="Olivia", phone_numbers=[OWNER_PHONE],
                                         telegram_ids=["42"]),
        delivery=DeliveryPolicy(channel_probe_seconds=0.2).__dict__)
    telegram = RecordingSender("telegram")
    world.app.add_channel(telegram)
    await world.channel.start()  # receiving: ready, as `valet serve` starts it
    client = TestClient(TestServer(build_web_app(world.app, [world.channel], env={})))
    await client.start_server()
    assert (await client.get("/readyz")).status == 200
    try:
        good = world.twilio.auth_token
        world.twilio.auth_token = "changed-at-twilio"  # Valet's token is now refused (20003)
        fake_llm.script(LLMReply(content="First answer."), LLMReply(content="Second answer."))
        await world.text("hello?")
        await world.text("are you there?")
        await until(lambda: world.twilio.refused_auth > 0, "Twilio refused the account")
        await until(lambda: bool(telegram.sent), "the owner was told")
        ready = await client.get("/readyz")
        body = await ready.json()
        assert ready.status == 503 and body["checks"]["sms"] is False
        assert "20003" in body["problems"]["sms"]
        [notice] = telegram.texts("42")  # the owner, on another channel, once
        assert notice.startswith("sms stopped working") and "20003" in notice
        rows = await world.app.db.fetch("SELECT status FROM outbox WHERE channel = 'sms'")
        assert rows and all(r["status"] == "pending" for r in rows)  # waiting, not dead
        world.twilio.auth_token = good  # fixed: the next probe goes through
        world.app.clock.advance(seconds=1)  # past the probe interval
        world.app.outbound.wake()
        await until(lambda: len(world.replies(OWNER_PHONE)) == 2, "the waiting replies went")
        await world.idle()
        assert world.replies(OWNER_PHONE) == ["First answer.", "Second answer."]  # in order
        ready = await client.get("/readyz")
        assert ready.status == 200, await ready.text()
        assert len(telegram.texts("42")) == 1  # told once per outage
    finally:
        await client.close()
        await close()




