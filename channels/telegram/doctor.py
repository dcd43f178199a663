"""`valet doctor`'s look at Telegram as the Bot API sees it: the bot (getMe), its webhook
(getWebhookInfo) and its command menu (getMyCommands), each reported on its own. With
`--fix`: the webhook registered (or removed in polling mode) and the menu set."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta

from telegram import Bot
from telegram.error import TelegramError

from bot.config import Settings
from bot.setup.report import MenuSource, Report
from channels.telegram.checks import (
    NoBotApi,
    TelegramUnusable,
    TokenRefused,
    WebhookState,
    bot_username,
    make_bot,
    menu_set,
    register_webhook,
    remove_webhook,
    set_menu,
    webhook_state,
    webhook_url,
)
from channels.telegram.service import check_settings

RECENT_ERROR = timedelta(hours=24)  # an older webhook error is history, not a problem


@asynccontextmanager
async def _asking(method: str) -> AsyncIterator[None]:
    """Whatever Telegram answers to one Bot API call other than a result (a 502, a 404, a
    refusal) as TelegramUnusable naming the method; never the token."""
    try:
        yield
    except TelegramUnusable:
        raise
    except TelegramError as err:
        raise TelegramUnusable(f"Telegram refused {method}: {type(err).__name__}: "
                               f"{str(err.message)[:200]}") from None


async def check_telegram(settings: Settings, report: Report, menu: MenuSource) -> None:
    """The bot (getMe), its webhook (getWebhookInfo) and its command menu (getMyCommands),
    each reported on its own: one failing call does not hide what the others say. A refused
    token stops here (every call would be refused the same way)."""
    tg = settings.telegram
    if not tg.token:
        report.off("Telegram: set VALET_TELEGRAM_TOKEN to turn it on (valet onboard)")
        return
    try:
        check_settings(tg)
    except Exception as err:
        report.bad(str(err))
        return
    bot = make_bot(tg.token, tg.api_url)
    name = "the bot"
    try:
        try:
            name = "@" + await bot_username(bot)
            report.ok(f"Telegram bot {name} ({tg.mode})")
        except (TokenRefused, NoBotApi) as err:  # every other call would fail alike
            report.bad(str(err))
            return
        except TelegramUnusable as err:
            report.bad(str(err))
        await _telegram_part(report, "Telegram webhook",
                             lambda: _webhook_check(settings, bot, report))
        await _telegram_part(report, "Telegram command menu",
                             lambda: _menu_check(settings, bot, name, report, menu))
    finally:
        await bot.shutdown()


async def _telegram_part(report: Report, name: str,
                         check: Callable[[], Awaitable[None]]) -> None:
    async def part() -> None:
        try:
            await check()
        except TelegramUnusable as err:
            report.bad(str(err))

    await report.guarded(name, part)


async def _webhook_check(settings: Settings, bot: Bot, report: Report) -> None:
    state = await webhook_state(bot)
    if settings.telegram.mode == "webhook":
        await _webhook(settings, bot, state, report)
    elif state.url:
        if report.fix:
            async with _asking("deleteWebhook"):
                await remove_webhook(bot)
            report.did(f"removed the webhook {state.url}: polling receives the updates")
        else:
            report.bad(f"Telegram has a webhook set ({state.url}) but telegram.mode is "
                       "polling: polling receives nothing while it is; valet doctor --fix "
                       "removes it (or set telegram.mode: webhook)")


async def _menu_check(settings: Settings, bot: Bot, name: str, report: Report,
                      menu: MenuSource) -> None:
    async with _asking("getMyCommands"):
        present = await menu_set(bot)
    if present:
        return
    if report.fix:
        commands = await menu()
        async with _asking("setMyCommands"):
            await set_menu(bot, commands, settings.owner.telegram_ids)
        report.did(f"set {name}'s command menu")
    else:
        report.note(f"{name} has no command menu yet (valet serve sets it at start; "
                    "--fix sets it now)")


async def _webhook(settings: Settings, bot: Bot, state: WebhookState, report: Report) -> None:
    expected = webhook_url(settings.telegram.webhook_url or "")
    if state.url != expected:
        if report.fix:
            async with _asking("setWebhook"):
                await register_webhook(bot, settings.telegram)
            report.did(f"registered the webhook {expected}")
            return
        now_set = state.url or "none"
        report.bad(f"Telegram's webhook is {now_set}, not {expected}: valet doctor --fix "
                   "registers it (valet serve does at start too)")
        return
    report.ok(f"Telegram webhook {expected} ({state.pending} update(s) waiting)")
    at = state.last_error_at
    if state.last_error and (at is None or datetime.now(UTC) - at < RECENT_ERROR):
        when = f" at {at:%Y-%m-%d %H:%M} UTC" if at else ""
        report.bad(f"Telegram could not deliver to the webhook{when}: {state.last_error}; "
                   "check that the public URL reaches valet serve over https (the proxy, "
                   "the certificate)")
