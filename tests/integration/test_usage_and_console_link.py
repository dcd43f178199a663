"""What a turn costs is written once per turn (tokens and LLM requests), and `valet
console-link` makes the owner's sign-in link from a shell."""

from __future__ import annotations

import argparse
from datetime import UTC, date, datetime

import pytest

from bot.config import ConfigError
from bot.config.channel_sections import ConsoleSettings
from bot.config.sections import OwnerSettings
from bot.llm.port import TokenUsage
from bot.turn.usage import UsageStore
from tests.fakes.fake_openai import Reply, ToolCall
from tests.integration.console_harness import say


async def test_a_turn_records_its_tokens_and_requests_once(app_factory, fake_llm):
    app = await app_factory()
    owner = await app.ensure_owner()
    fake_llm.script(Reply(tool_calls=[ToolCall("current_time", {})], usage=(100, 10)),
                    Reply(content="It is nine.", usage=(150, 5)))
    reply = await say(app, owner.id, "what time is it?")
    store = UsageStore(app.db)
    start, end = datetime(2000, 1, 1, tzinfo=UTC), datetime(2100, 1, 1, tzinfo=UTC)
    [day] = await store.daily(start, end, "UTC")
    assert (day.user_id, day.prompt_tokens, day.completion_tokens, day.llm_requests,
            day.turns) == (owner.id, 250, 15, 2, 1)
    # The same turn recorded again (a turn redone after a crash) is not counted twice.
    await store.record(reply.turn_id, owner.id, "console", app.clock.now(),
                       TokenUsage(999, 999), 9)
    assert await store.daily(start, end, "UTC") == [day]


async def test_days_are_counted_in_the_zone_asked_for():
    from bot.db import connect

    db = await connect("sqlite:///:memory:", migrate=True, migrations=("bot.db",))
    try:
        store = UsageStore(db)
        late = datetime(2026, 1, 5, 23, 30, tzinfo=UTC)  # already the 6th in Paris
        await store.record("t1", "ana", "sms", late, TokenUsage(10, 1), 1)
        start, end = datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 2, 1, tzinfo=UTC)
        [utc] = await store.daily(start, end, "UTC")
        [paris] = await store.daily(start, end, "Europe/Paris")
        assert (utc.day, paris.day) == (date(2026, 1, 5), date(2026, 1, 6))
    finally:
        await db.close()


async def test_console_link_prints_a_one_time_link_or_sends_it_to_the_owners_chat(
        app_settings, capsys):
    from bot.cli.console_link import run_console_link

    settings = app_settings(console=ConsoleSettings(enabled=True, url="http://127.0.0.1:9"),
                            owner=OwnerSettings(telegram_ids=["42"]))
    said: list[str] = []
    assert await run_console_link(settings, argparse.Namespace(send=False), said.append) == 0
    assert said[0].startswith("http://127.0.0.1:9/console/login?t=")
    said.clear()
    assert await run_console_link(settings, argparse.Namespace(send=True), said.append) == 0
    assert "sent to the owner's chat" in said[0]
    from bot.app import App

    app = await App.build(settings)
    try:
        [queued] = await app.outbound.outbox.list("pending")
        assert queued["channel"] == "telegram" and queued["address"] == "42"
        assert "/console/login?t=" in queued["text"] and "10 minutes" in queued["text"]
    finally:
        await app.close()


async def test_console_link_is_refused_while_the_console_is_off(app_settings):
    from bot.cli.console_link import run_console_link

    with pytest.raises(ConfigError, match=r"console\.enabled: true"):
        await run_console_link(app_settings(), argparse.Namespace(send=False), print)


async def test_the_console_link_sent_is_in_the_owners_language(app_settings):
    from bot.app import App
    from bot.cli.console_link import run_console_link

    settings = app_settings(console=ConsoleSettings(enabled=True, url="http://127.0.0.1:9"),
                            owner=OwnerSettings(telegram_ids=["42"]))
    app = await App.build(settings)
    try:
        owner = await app.ensure_owner()
        await app.users.set_language(owner.id, "de", app.clock.now())
    finally:
        await app.close()
    assert await run_console_link(settings, argparse.Namespace(send=True), print) == 0
    app = await App.build(settings)
    try:
        [queued] = await app.outbound.outbox.list("pending")
        assert queued["text"].startswith("Hier ist dein Link zur Konsole. Er gilt einmal, 10 "
                                         "Minuten lang: http://127.0.0.1:9/console/login?t=")
    finally:
        await app.close()
