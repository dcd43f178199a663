"""A persona that rewords one line changes what the person receives, end to end: the SMS HELP
answer through the signed webhook and Twilio, a reminder's text through the trigger engine and
the outbox, a slash command's answer through the turn."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from bot.config.policies import AccessSettings, ChannelAccess
from bot.contracts.clock import FakeClock
from tests.fakes.fake_openai import Reply as LLMReply
from tests.helpers import RecordingSender, incoming
from tests.integration.sms_harness import new_sid, sms_world
from triggers.service import Owner

PERSONA = """\
name: Brief
system_prompt: You are brief.
lines:
  sms_help: Brief here. Text me; STOP ends it.
  reminder: 'Psst, {text}!'
  stop_nothing_running: Idle.
"""


def persona_file(tmp_path) -> str:
    path = tmp_path / "brief.yaml"
    path.write_text(PERSONA, encoding="utf-8")
    return str(path)


async def test_sms_help_says_the_personas_line(app_factory, fake_llm, tmp_path):
    world, close = await sms_world(app_factory, persona=persona_file(tmp_path))
    try:
        fake_llm.script(LLMReply(content="Hi!"))
        await world.text("hello")  # known from now on (HELP from a stranger: access policy)
        await world.idle()
        await world.text("HELP", sid=new_sid())
        await world.idle()
        assert world.replies() == ["Hi!", "Brief here. Text me; STOP ends it."]
        assert len(fake_llm.requests) == 1
    finally:
        await close()


async def test_a_reminder_and_a_command_say_the_personas_lines(app_factory, fake_llm, tmp_path):
    clock = FakeClock(datetime(2026, 1, 5, 9, tzinfo=UTC))
    app = await app_factory(
        clock=clock, persona=persona_file(tmp_path),
        access=AccessSettings(channels={"test": ChannelAccess(policy="allowlist",
                                                              allow=["alice"])}))
    sender = RecordingSender("test")
    app.add_channel(sender)
    await app.start()
    alice = (await app.access.admit("test", "alice", "Alice", "hi", clock.now())).user
    assert alice is not None
    await app.triggers.service.remind(Owner(alice.id, "UTC"), "call mom",
                                      clock.now() + timedelta(hours=1))
    clock.advance(hours=2)
    await app.triggers.engine.tick()
    await asyncio.wait_for(app.gateway.wait_idle(), 60)
    assert sender.texts() == ["Psst, call mom!"]

    await app.gateway.receive(incoming("/stop"))
    await asyncio.wait_for(app.gateway.wait_idle(), 60)
    assert sender.texts()[-1] == "Idle."
    assert fake_llm.requests == []
