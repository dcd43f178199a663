"""Every notice Valet writes outside a turn is in the language of whom reads it: the approval
sweeper's expired and interrupted notices (composed in the background, for the request's
person), the owner's task-budget and strangers-capped notices (composed per owner)."""

from __future__ import annotations

from tests.fakes.fake_openai import Reply as LLMReply
from tests.fakes.fake_openai import ToolCall
from tests.helpers import RecordingSender
from tests.integration.test_approvals import EMAIL, say, start


async def test_the_sweepers_expired_notice_is_in_the_persons_language(app_factory, fake_llm,
                                                                      tmp_path):
    app, me = await start(app_factory, tmp_path)
    await app.users.set_language(me, "es", app.clock.now())
    console = RecordingSender("console")
    app.add_channel(console)
    fake_llm.script(LLMReply(tool_calls=[ToolCall("send_email", EMAIL)]))
    await say(app, me, "manda el correo al equipo")
    await app.start()
    app.clock.advance(minutes=31)
    await app.sweep_approvals()
    await app.gateway.wait_idle()
    told = console.texts()[-1]
    assert "esperó 30 minutos tu visto bueno, así que no lo hice" in told, told
