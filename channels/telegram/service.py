"""The Telegram channel as `valet serve` runs it: python-telegram-bot inside Valet's own event
loop (never `run_polling`, which owns the loop), long polling or a webhook on Valet's server.

Polling is our own small loop over `Bot.get_updates`: an update is confirmed to Telegram (the
next call's offset) only after the gateway has stored it, so a crash never loses one (PTB's
`Updater` confirms a batch as soon as it is queued, before anything has handled it). Within a
batch, chats are handled concurrently and one chat's updates in order; the handling itself is
quick (the gateway stores the message and runs the turn in the background), so one person's
slow turn never delays another's button press. Only the holder of the bot's lease polls.

Webhook mode: Telegram posts to /telegram/webhook with the secret token header; a missing or
wrong secret gets 403 before anything is parsed or stored (compared in constant time).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import re
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from aiohttp import web
from telegram import Bot, Update
from telegram.error import Conflict, RetryAfter, TelegramError
from telegram.request import HTTPXRequest

from bot.channel import MenuCommand
from bot.config import ConfigError, Settings, TelegramSettings
from bot.gateway.door import ChannelHost, Door
from bot.transcribe import Transcriber
from channels.telegram.adapter import TelegramChannel, retry_after_seconds
from channels.telegram.checks import ALLOWED_UPDATES as ALLOWED_UPDATES
from channels.telegram.checks import DEFAULT_API_URL, register_webhook, set_menu
from channels.telegram.checks import WEBHOOK_PATH as WEBHOOK_PATH
from channels.telegram.checks import bot_commands as bot_commands
from channels.telegram.checks import webhook_url as webhook_url
from channels.telegram.inbound import CHANNEL, BotIdentity, InboundHandler, InboundSettings
from channels.telegram.lease import FileLease, PollerLease, RedisLease, bot_id, lease_file
from channels.telegram.limiter import OutboundLimiter
from persona.lines import TelegramLines

log = logging.getLogger(__name__)

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
_SECRET_FORMAT = re.compile(r"[A-Za-z0-9_-]{1,256}")


def check_settings(settings: TelegramSettings) -> None:
    """Start-up checks, worded for the operator (the secrets themselves are never shown)."""
    if not settings.token:
        raise ConfigError("Telegram needs VALET_TELEGRAM_TOKEN (the token BotFather gave you)")
    if settings.mode == "webhook":
        if not settings.webhook_secret or not _SECRET_FORMAT.fullmatch(settings.webhook_secret):
            raise ConfigError("telegram.mode webhook needs VALET_TELEGRAM_WEBHOOK_SECRET: 1-256 "
                              "characters of A-Z, a-z, 0-9, _ and -")
        if not (settings.webhook_url or "").startswith(("https://", "http://")):
            raise ConfigError("telegram.mode webhook needs telegram.webhook_url: the public "
                              "https:// address of this server")


class TelegramService:
    name = "telegram"

    def __init__(self, settings: TelegramSettings, *, door: Door, lines: TelegramLines,
                 menu: Sequence[MenuCommand], owner_chats: Sequence[str] = (),
                 is_known: Callable[[str], Awaitable[bool]], lease: PollerLease,
                 transcriber: Transcriber | None = None, vision: bool = False,
                 limiter: OutboundLimiter | None = None, status_delay: float = 1.0,
                 poll_timeout: int = 25,
                 now: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        check_settings(settings)
        assert settings.token is not None
        self.settings = settings
        api = (settings.api_url or DEFAULT_API_URL).rstrip("/")
        self.bot = Bot(settings.token, base_url=f"{api}/bot", base_file_url=f"{api}/file/bot",
                       request=HTTPXRequest(connection_pool_size=64, read_timeout=15.0),
                       get_updates_request=HTTPXRequest(connection_pool_size=2,
                                                        read_timeout=poll_timeout + 10.0))
        self.channel = TelegramChannel(self.bot, limiter, lines=lines, status_delay=status_delay)
        self.inbound = InboundHandler(
            self.bot, door, self.channel, is_known=is_known, transcriber=transcriber,
            settings=InboundSettings(groups=settings.groups, vision=vision), lines=lines,
            now=now)
        self.menu = list(menu)  # the command table's commands for Telegram (bot.commands)
        self.owner_chats = list(owner_chats)  # their menu lists the owner's commands too
        self.lease = lease
        self.transcriber = transcriber
        self.poll_timeout = poll_timeout
        self.ready = False
        self._accepting = False
        self._poller: asyncio.Task[None] | None = None
        self._offset: int | None = None  # the first update not yet stored

    @classmethod
    def build(cls, host: ChannelHost, settings: Settings, **kwargs: Any) -> TelegramService:
        """The service `valet serve` runs, from the settings, on the host's door."""
        check_settings(settings.telegram)
        token = settings.telegram.token or ""
        lease: PollerLease
        if settings.redis_url:
            import redis.asyncio as redis_asyncio

            client = redis_asyncio.from_url(settings.redis_url)
            lease = RedisLease(client, f"valet:telegram:poller:{bot_id(token)}")
        else:
            lease = FileLease(lease_file(settings.database_url, token))
        llm = settings.llm
        transcriber = None
        if llm.transcription_model:
            transcriber = Transcriber(base_url=llm.base_url,
                                      api_key=llm.api_key_value() or "not-needed",
                                      model=llm.transcription_model)

        async def is_known(address: str) -> bool:
            return await host.identities.resolve("telegram", address) is not None

        return cls(settings.telegram, door=host.door, lines=host.lines,
                   menu=host.commands.menu(CHANNEL), owner_chats=settings.owner.telegram_ids,
                   is_known=is_known, lease=lease,
                   transcriber=transcriber, vision=llm.vision, now=host.clock.now, **kwargs)

    @property
    def username(self) -> str:
        """The bot's @name, once started (getMe)."""
        return self.inbound.me.username if self.inbound.me is not None else ""

    # --- ServedChannel ---------------------------------------------------------------------

    def routes(self) -> list[web.RouteDef]:
        if self.settings.mode != "webhook":
            return []
        return [web.post(WEBHOOK_PATH, self._webhook)]

    async def start(self) -> None:
        await self.bot.initialize()
        me = self.bot.bot
        self.inbound.me = BotIdentity(me.id, me.username or "")
        await self._set_menu()
        self._accepting = True
        if self.settings.mode == "webhook":
            url = await register_webhook(self.bot, self.settings)
            log.info("telegram: @%s receives updates by webhook at %s", me.username, url)
        else:
            self._poller = asyncio.create_task(self._poll_while_leased())
            log.info("telegram: @%s receives updates by long polling", me.username)
        self.ready = True

    async def _set_menu(self) -> None:
        """The `/` menu from the command table (channels.telegram.checks.set_menu)."""
        await set_menu(self.bot, self.menu, self.owner_chats)

    async def stop(self) -> None:
        """Take no new updates (the ones not yet confirmed come again at the next start)."""
        self._accepting = False
        if self._poller is not None:
            self._poller.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._poller
            self._poller = None
        await self.lease.release()

    async def close(self) -> None:
        """After the last replies went out."""
        self.ready = False
        with contextlib.suppress(TelegramError):
            await self.bot.shutdown()
        if self.transcriber is not None:
            await self.transcriber.close()
        await self.lease.close()

    # --- webhook ---------------------------------------------------------------------------

    async def _webhook(self, request: web.Request) -> web.Response:
        given = request.headers.get(SECRET_HEADER, "")
        expected = self.settings.webhook_secret or ""
        if not hmac.compare_digest(given.encode(), expected.encode()):
            return web.Response(status=403, text="forbidden")
        if not self._accepting:
            return web.Response(status=503, text="shutting down")  # Telegram sends it again
        try:
            update = Update.de_json(await request.json(), self.bot)
        except (ValueError, TypeError, KeyError):
            return web.Response(status=400, text="not an update")
        try:
            await self.inbound.handle(update)
        except Exception:
            log.exception("telegram update %s not stored; Telegram will resend it",
                          update.update_id)
            return web.Response(status=500)
        return web.Response(text="ok")

    # --- polling ---------------------------------------------------------------------------

    async def _poll_while_leased(self) -> None:
        waiting_logged = False
        while True:
            try:
                held = await self.lease.acquire()
            except Exception:
                log.exception("telegram: poller lease unavailable; trying again")
                held = False
            if not held:
                if not waiting_logged:
                    log.info("telegram: another process polls this bot; standing by")
                    waiting_logged = True
                await asyncio.sleep(5.0)
                continue
            waiting_logged = False
            await self._poll_once()

    async def _poll_once(self) -> None:
        try:
            updates = await self.bot.get_updates(
                offset=self._offset, timeout=self.poll_timeout, allowed_updates=ALLOWED_UPDATES)
        except RetryAfter as err:
            await asyncio.sleep(retry_after_seconds(err))
            return
        except Conflict as err:
            log.warning("telegram: %s", err.message)
            await asyncio.sleep(5.0)
            return
        except TelegramError as err:
            log.warning("telegram: polling failed (%s); trying again", err)
            await asyncio.sleep(2.0)
            return
        by_chat: dict[int, list[Update]] = {}
        for update in updates:
            chat = update.effective_chat.id if update.effective_chat else 0
            by_chat.setdefault(chat, []).append(update)
        results = await asyncio.gather(*(self._handle_in_order(u) for u in by_chat.values()))
        if all(results) and updates:
            self._offset = updates[-1].update_id + 1  # confirmed only once stored
        elif updates:
            await asyncio.sleep(1.0)  # a store failed: the batch comes again (dedupe holds)

    async def _handle_in_order(self, updates: list[Update]) -> bool:
        for update in updates:
            try:
                await self.inbound.handle(update)
            except Exception:
                log.exception("telegram update %s not stored; polling it again",
                              update.update_id)
                return False
        return True
