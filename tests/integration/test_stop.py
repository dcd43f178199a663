"""/stop: a person stops the turn that is running, through the gateway like any message."""

from __future__ import annotations

import asyncio

from bot.config.policies import AccessSettings, ChannelAccess
from bot.config.sections import AgentsSettings
from tests.fakes.fake_openai import Reply as LLMReply
from tests.fakes.fake_openai import ToolCall
from tests.helpers import RecordingSender, assert_closed, incoming


async def test_stop_during_a_slow_tool_cancels_it_and_nothing_is_replayed(app_factory, fake_llm,
                                                                          tmp_path):
    hold, log = tmp_path / "hold", tmp_path / "calls.log"
    hold.touch()  # the tool waits while this file exists
    registry = tmp_path / "slow.yaml"
    registry.write_text("tools:\n  - module: tests.fakes.risky_tools\n    only: [slow_transfer]\n"
                        f"    settings: {{hold: {hold}, log: {log}}}\n")
    access = AccessSettings(channels={"test": ChannelAccess(policy="allowlist",
                                                            allow=["alice"])})
    app = await app_factory(access=access, agents=AgentsSettings(registries=[str(registry)]))
    sender = RecordingSender("test")
    app.add_channel(sender)
    await app.start()
    fake_llm.script(LLMReply(tool_calls=[ToolCall("slow_transfer", {"to": "bob", "amount": 5})]))
    await app.gateway.receive(incoming("send bob 5", address="alice"))
    for _ in range(200):  # the tool is running once it logged its start
        if log.exists():
            break
        await asyncio.sleep(0.02)
    assert log.exists()
    await app.gateway.receive(incoming("/stop", address="alice"))
    await asyncio.wait_for(app.gateway.wait_idle(), 60)
    assert sender.texts("alice") == [app.persona.lines.cancelled]
    assert fake_llm.calls == 1  # no LLM call after the stop, none for /stop itself
    user = await app.identities.resolve("test", "alice")
    stored = await app.history.load(user.id)
    assert_closed(stored)
    results = [m["content"] for m in stored if m["role"] == "tool"]
    assert results == ["Not finished: cancelled by the user."]
    await app.close()

    hold.unlink()
    again = await app_factory(access=access, agents=AgentsSettings(registries=[str(registry)]))
    again.add_channel(resend := RecordingSender("test"))
    await again.start()
    await asyncio.wait_for(again.gateway.wait_idle(), 60)
    assert resend.sent == [] and fake_llm.calls == 1  # nothing replayed at the next start


async def test_stop_with_nothing_running_says_so_without_the_llm(app_factory, fake_llm):
    access = AccessSettings(channels={"test": ChannelAccess(policy="allowlist",
                                                            allow=["alice"])})
    app = await app_factory(access=access)
    app.add_channel(sender := RecordingSender("test"))
    await app.start()
    await app.gateway.receive(incoming("/stop", address="alice"))
    await asyncio.wait_for(app.gateway.wait_idle(), 60)
    assert sender.texts("alice") == ["Nothing is running right now."]
    assert fake_llm.calls == 0
