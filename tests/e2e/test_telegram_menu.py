"""Telegram's `/` menu is the command table's: every command Valet answers on Telegram is in
it (those other parts register too: /tasks, /memory, /forget), each with its /help line, and
the owner's own chat lists the owner's commands as well. Built as `valet serve` builds it."""

from __future__ import annotations

import pytest
from telegram import BotCommand
from telegram.error import BadRequest

from bot.app.channels import configured_channels
from bot.config.channel_sections import TelegramSettings
from bot.config.sections import MemorySettings, OwnerSettings
from channels.telegram.checks import make_bot
from persona.catalog import lines_in
from tests.e2e.telegram_harness import OWNER_CHAT
from tests.fakes.fake_telegram import TOKEN

GERMAN = lines_in("de")


async def test_every_command_in_the_table_is_in_the_menu_telegram_is_sent(app_factory, fake_tg,
                                                                           tmp_path):
    persona = tmp_path / "menu.yaml"
    persona.write_text("name: M\nsystem_prompt: hi\nlines:\n"
                       "  about_tasks: what is on your schedule\n", encoding="utf-8")
    app = await app_factory(
        persona=str(persona), memory=MemorySettings(),
        telegram=TelegramSettings(token=TOKEN, api_url=fake_tg.api_url),
        owner=OwnerSettings(telegram_ids=[str(OWNER_CHAT)]))
    [telegram] = await configured_channels(app.settings, app, env={})
    await telegram.start()
    try:
        table = app.commands.menu("telegram")
        names = {c.name for c in table}
        assert {"/help", "/pending", "/cancel", "/stop", "/link", "/whoami", "/pair",
                "/start", "/tasks", "/memory", "/forget"} <= names
        owners = {c["command"]: c["description"] for c in fake_tg.chat_commands[OWNER_CHAT]}
        assert owners == {c.name[1:]: c.description for c in table}
        assert owners["tasks"] == "what is on your schedule"  # the persona's line
        assert owners["pending"] == "what waits for your OK or your answer"  # its /help line
        everyone = [c["command"] for c in fake_tg.commands]
        assert everyone == [c.name[1:] for c in table if not c.owner_only]
        assert "pair" not in everyone and "pair" in owners  # the owner's alone
        assert "tasks" in everyone and "memory" in everyone and "forget" in everyone
        # One list per language Valet speaks (setMyCommands language_code): a person whose
        # Telegram is in German reads the menu in German, the owner's chat too.
        assert sorted({language for language, _ in fake_tg.language_commands}) == \
            ["de", "en", "es", "fr", "pt"]
        german = {c["command"]: c["description"] for c in fake_tg.language_commands["de", None]}
        assert list(german) == everyone
        assert german["tasks"] == GERMAN.about_tasks and german["pending"] == GERMAN.about_pending
        german_owner = fake_tg.language_commands["de", OWNER_CHAT]
        assert {c["command"] for c in german_owner} == set(owners)
        english = {c["command"]: c["description"] for c in fake_tg.language_commands["en", None]}
        assert english["tasks"] == "what is on your schedule"  # the persona's own language
    finally:
        await telegram.stop()
        await telegram.close()


async def test_the_fake_takes_a_language_code_as_telegram_does(fake_tg):
    """Two lowercase letters or nothing (TDLib's validate_bot_language_code); getMyCommands
    answers the list of exactly that scope and language."""
    bot = make_bot(TOKEN, fake_tg.api_url)
    async with bot:
        await bot.set_my_commands([BotCommand("help", "Hilfe")], language_code="de")
        assert [c.description for c in await bot.get_my_commands(language_code="de")] == \
            ["Hilfe"]
        assert await bot.get_my_commands(language_code="fr") == ()
        with pytest.raises(BadRequest, match=r"(?i)invalid language code specified"):
            await bot.set_my_commands([BotCommand("help", "Help")], language_code="deu")
