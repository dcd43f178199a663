"""Is the Telegram bot usable, as `valet onboard` and `valet doctor` ask it: the token
(getMe), the webhook as Telegram has it (getWebhookInfo: its URL, the last delivery error),
the command menu; and the few safe repairs (register or remove the webhook, set the menu from
the command table), which `valet serve` does at start with the same functions. Every failure
is TelegramUnusable with one line that never contains the token."""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from telegram import Bot, BotCommand, BotCommandScopeChat
from telegram.error import Conflict, InvalidToken, NetworkError, TelegramError
from telegram.request import HTTPXRequest

from bot.channel import MenuCommand
from bot.config.channel_sections import TelegramSettings
from bot.config.urls import telegram_api_base

log = logging.getLogger(__name__)

DEFAULT_API_URL = "https://api.telegram.org"
WEBHOOK_PATH = "/telegram/webhook"
ALLOWED_UPDATES = ["message", "callback_query"]
_COMMAND_NAME = re.compile(r"[a-z0-9_]{1,32}")


class TelegramUnusable(Exception):
    """One line for the operator (never the token)."""


class TokenRefused(TelegramUnusable):
    """Telegram refused the token itself: every other call would be refused the same way."""


class NoBotApi(TelegramUnusable):
    """What answers at VALET_TELEGRAM_API_URL is not a Bot API server: every other call would
    fail the same way."""


@dataclass(frozen=True)
class WebhookState:
    url: str  # "" when none is set (polling)
    pending: int
    last_error: str | None
    last_error_at: datetime | None


def webhook_url(base: str) -> str:
    base = base.rstrip("/")
    return base if base.endswith(WEBHOOK_PATH) else base + WEBHOOK_PATH


def api_base(api_url: str | None) -> str:
    """The Bot API server calls go to (VALET_TELEGRAM_API_URL, with or without its /bot:
    bot.config.urls), without the /bot<token> python-telegram-bot adds."""
    return telegram_api_base(api_url or DEFAULT_API_URL)


def make_bot(token: str, api_url: str | None = None, *, read_timeout: float = 15.0) -> Bot:
    api = api_base(api_url)
    return Bot(token, base_url=f"{api}/bot", base_file_url=f"{api}/file/bot",
               request=HTTPXRequest(connection_pool_size=4, read_timeout=read_timeout),
               get_updates_request=HTTPXRequest(connection_pool_size=1,
                                                read_timeout=read_timeout + 10.0))


class _SaidInOurWords(logging.Filter):
    """python-telegram-bot's traceback for an answer that is not JSON: the caller's one line
    says what it means (not a Bot API server at that address)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Can not load invalid JSON data")


async def bot_username(bot: Bot) -> str:
    """The bot's @name (getMe); TelegramUnusable when the token is refused, Telegram cannot
    be reached, or what answers at VALET_TELEGRAM_API_URL is not a Bot API server."""
    said_here = _SaidInOurWords()
    library = logging.getLogger("telegram.request.BaseRequest")
    library.addFilter(said_here)
    try:
        me = await bot.get_me()
    except InvalidToken as err:
        if err.__cause__ is not None:  # its answer was not the Bot API's JSON at all
            where = bot.base_url.removesuffix(bot.token).removesuffix("/bot")
            raise NoBotApi(
                f"no Bot API server at {where} (getMe answered {_plain(err).split('.')[0]} "
                "and no Bot API JSON): check VALET_TELEGRAM_API_URL, the server's address "
                "alone, e.g. https://api.telegram.org (Valet adds /bot<token>)") from None
        raise TokenRefused("Telegram refused the bot token: check VALET_TELEGRAM_TOKEN "
                               "(the token @BotFather gave you, /mybots > API Token)") from None
    except NetworkError as err:
        raise TelegramUnusable(f"cannot reach Telegram: {type(err).__name__}: "
                               f"{_plain(err)}") from None
    except TelegramError as err:
        raise TelegramUnusable(f"Telegram refused getMe: {_plain(err)}") from None
    finally:
        library.removeFilter(said_here)
    return me.username or str(me.id)


async def webhook_state(bot: Bot) -> WebhookState:
    try:
        info = await bot.get_webhook_info()
    except TelegramError as err:
        raise TelegramUnusable(f"Telegram refused getWebhookInfo: {_plain(err)}") from None
    return WebhookState(info.url or "", info.pending_update_count or 0,
                        info.last_error_message, info.last_error_date)


async def register_webhook(bot: Bot, settings: TelegramSettings) -> str:
    """Telegram posts updates to this server from now on; the URL registered."""
    url = webhook_url(settings.webhook_url or "")
    await bot.set_webhook(url, secret_token=settings.webhook_secret,
                          allowed_updates=ALLOWED_UPDATES)
    return url


async def remove_webhook(bot: Bot) -> None:
    """Back to polling (updates not yet fetched stay with Telegram)."""
    await bot.delete_webhook(drop_pending_updates=False)


async def menu_set(bot: Bot) -> bool:
    """The bot has a command menu (`valet serve` sets Valet's at start)."""
    return bool(await bot.get_my_commands())


def bot_commands(menu: Iterable[MenuCommand], language: str = "") -> list[BotCommand]:
    """Telegram's form of the commands: a name of 1-32 of a-z, 0-9 and _ without its slash,
    a description of 1-256 characters (in `language` when given and the command has it); a
    command Telegram cannot show is left out."""
    shown = []
    for command in menu:
        name = command.name.removeprefix("/")
        if not _COMMAND_NAME.fullmatch(name):
            log.warning("telegram: %s cannot be in the command menu (a-z, 0-9, _ only)",
                        command.name)
            continue
        described = dict(command.in_languages).get(language, command.description)
        shown.append(BotCommand(name, described.strip()[:256] or command.name))
    return shown


def menu_languages(menu: Sequence[MenuCommand]) -> list[str]:
    """The languages the menu is described in (Telegram takes two lowercase letters)."""
    found = {code for command in menu for code, _ in command.in_languages}
    return sorted(code for code in found if re.fullmatch(r"[a-z]{2}", code))


async def set_menu(bot: Bot, menu: Sequence[MenuCommand], owner_chats: Sequence[str]) -> None:
    """The `/` menu from the command table: everyone's lists the commands anyone may use;
    the owner's chats list the owner's commands too. Each as a default list (the persona's
    language) and one per language, which Telegram shows a person whose app is in it."""
    anyone = [c for c in menu if not c.owner_only]
    languages = menu_languages(menu)
    await bot.set_my_commands(bot_commands(anyone))
    for language in languages:
        await bot.set_my_commands(bot_commands(anyone, language), language_code=language)
    if len(anyone) == len(menu):
        return
    for chat in owner_chats:
        try:
            scope = BotCommandScopeChat(int(chat))
            await bot.set_my_commands(bot_commands(menu), scope=scope)
            for language in languages:
                await bot.set_my_commands(bot_commands(menu, language), scope=scope,
                                          language_code=language)
        except (ValueError, TelegramError) as err:  # the owner never wrote to the bot
            log.warning("telegram: the owner's command menu for chat %s is not set: %s",
                        chat, err)


@dataclass(frozen=True)
class Starter:
    user_id: int
    name: str


async def wait_for_start(bot: Bot, timeout: float,
                         clock: Callable[[], float] = time.monotonic) -> Starter | None:
    """The first person who sends /start to the bot within `timeout` seconds (None if
    nobody does). The updates read are confirmed to Telegram, so `valet serve` does not
    answer that /start again."""
    deadline = clock() + timeout
    offset: int | None = None
    while (left := deadline - clock()) > 0:
        try:
            updates = await bot.get_updates(offset=offset, timeout=int(min(left, 10)),
                                            allowed_updates=["message"])
        except Conflict:
            raise TelegramUnusable(
                "another program receives this bot's updates (a running valet serve, or a "
                "webhook): stop it, or give --telegram-owner-id") from None
        except NetworkError:
            await asyncio.sleep(1.0)
            continue
        for update in updates:
            offset = update.update_id + 1
            message = update.message
            if message is not None and message.from_user is not None and \
                    (message.text or "").strip().lower().startswith("/start"):
                await bot.get_updates(offset=offset, timeout=0)  # confirmed: read once
                return Starter(message.from_user.id, message.from_user.full_name)
    return None


def _plain(err: TelegramError) -> str:
    return str(err.message)[:200]
