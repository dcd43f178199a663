"""The Telegram channel as `valet serve` runs it: python-telegram-bot inside Valet's own event
loop (never `run_polling`, which owns the loop), long polling or a webhook on Valet's server.

Polling is our own small loop over getUpdates (channels.telegram.polling): an update is
confirmed to Telegram only after the gateway has stored it. Only the holder of the bot's lease
polls.

Nothing one update does can stop the others (channels.telegram.updates: each parsed on its
own, tried a few times, then given up and recorded). Only when the database is away does the
batch wait and come again (Telegram keeps it).

Webhook mode: Telegram posts to /telegram/webhook with the secret token header; a missing or
wrong secret gets 403 before anything is parsed or stored (compared in constant time). The
body is read with a limit, a depth and a time bound (bot.plumbing.request_body): what is not an
update gets 400. An update is tried the same way; it is answered 200 once it is stored or given up;
while the database is away (or before the bot has reached the Bot API) it is kept in the spool
(bot.plumbing.spool) and answered 200 too, and stored once it can be.

The Bot API out of reach at start (getMe, the webhook's registration) is not an exit: the
channel is marked down (`/readyz` names it, the owner is told once on another channel: the
host's `ChannelStatus`), and it is tried again with a growing wait until it answers; the
process's other channels work meanwhile. `status` says what receiving does now, truthfully:
polling, standing by for another process's poller, waiting for Redis (the poller's lease) or
for the database, down.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import re
import warnings
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from aiohttp import web
from telegram import Bot
from telegram.error import InvalidToken, TelegramError
from telegram.request import HTTPXRequest
from telegram.warnings import PTBUserWarning

from bot.channel import MenuCommand
from bot.config import ConfigError, Settings
from bot.config.channel_sections import TelegramSettings
from bot.gateway.door import ChannelHost, ChannelStatus, Door
from bot.plumbing.background import cancel_and_wait
from bot.plumbing.backoff import backoff_delay
from bot.plumbing.outages import DependencyDown, dependency_of
from bot.plumbing.request_body import BodyError, BodyLimits, read_json_object, refused
from bot.plumbing.spool import Spool, store_or_keep
from channels.telegram.adapter import TelegramChannel
from channels.telegram.checks import (
    WEBHOOK_PATH,
    api_base,
    register_webhook,
    set_menu,
)
from channels.telegram.inbound import CHANNEL, BotIdentity, InboundHandler, InboundSettings
from channels.telegram.lease import FileLease, PollerLease, RedisLease, bot_id, lease_file
from channels.telegram.limiter import OutboundLimiter
from channels.telegram.polling import Poller
from channels.telegram.updates import Updates, UpdateTries
from persona.lines_channels import TelegramLines

log = logging.getLogger(__name__)

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
MAX_UPDATE_BYTES = 1024 * 1024  # a webhook body (a real update is a few kilobytes)
_SECRET_FORMAT = re.compile(r"[A-Za-z0-9_-]{1,256}")
# Several web processes (Redis): one polls, the others stand by. A poller killed outright
# holds the lease until it expires; these bound how long Telegram's messages then wait
# (at most the lease plus one stand-by look, about 25 s).
REDIS_POLLER_LEASE_SECONDS = 20.0
REDIS_POLL_SECONDS = 8
UPDATE_KIND = "telegram.update"  # a webhook's update in the spool
# The Bot API out of reach at start: tried again after this, doubled each time up to the cap.
REACH_RETRY_SECONDS = 2.0
REACH_RETRY_CAP_SECONDS = 60.0
# Updates arrive as JSON and are parsed one by one (see `_fetch`): PTB's own get_updates parses
# the whole batch at once, and asking for the raw call by its name makes PTB suggest it.
warnings.filterwarnings("ignore", message=r"Please use 'Bot\.getUpdates'",
                        category=PTBUserWarning)


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
                 hears_voice: bool = False, vision: bool = False,
                 limiter: OutboundLimiter | None = None, status_delay: float = 1.0,
                 poll_timeout: int = 25, tries: UpdateTries | None = None,
                 body_limits: BodyLimits | None = None, health: ChannelStatus | None = None,
                 spool: Spool | None = None,
                 now: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        check_settings(settings)
        assert settings.token is not None
        self.settings = settings
        api = api_base(settings.api_url)
        self.bot = Bot(settings.token, base_url=f"{api}/bot", base_file_url=f"{api}/file/bot",
                       request=HTTPXRequest(connection_pool_size=64, read_timeout=15.0),
                       get_updates_request=HTTPXRequest(connection_pool_size=2,
                                                        read_timeout=poll_timeout + 10.0))
        self.channel = TelegramChannel(self.bot, limiter, lines=lines, status_delay=status_delay)
        self.inbound = InboundHandler(
            door, self.channel, is_known=is_known,
            settings=InboundSettings(groups=settings.groups, vision=vision,
                                     hears_voice=hears_voice), lines=lines, now=now)
        self.updates = Updates(self.inbound, door, self.bot, tries)
        self.door = door
        self.menu = list(menu)  # the command table's commands for Telegram (bot.turn.commands)
        self.owner_chats = list(owner_chats)  # their menu lists the owner's commands too
        self.lease = lease
        # How often a process that stands by looks whether the poller's lease is free.
        self.poller = Poller(self.bot, lease, self.updates, poll_timeout=poll_timeout,
                             standby_seconds=min(5.0, poll_timeout / 2))
        self.body_limits = body_limits or BodyLimits()
        self.health = health  # told when the Bot API cannot be reached at start, and after
        self.spool = spool
        if spool is not None:
            spool.replays(UPDATE_KIND, self._replay)
        self.now = now
        self.reach_retry_seconds = REACH_RETRY_SECONDS
        self._status = "not started"  # what receiving does, until the poller says it
        self._receiving = False  # as far as this process can tell, updates reach Valet
        self._accepting = False
        self._poller: asyncio.Task[None] | None = None
        self._reaching: asyncio.Task[None] | None = None

    @classmethod
    def build(cls, host: ChannelHost, settings: Settings, **kwargs: Any) -> TelegramService:
        """The service `valet serve` runs, from the settings, on the host's door."""
        check_settings(settings.telegram)
        token = settings.telegram.token or ""
        lease: PollerLease
        if settings.redis_url:
            import redis.asyncio as redis_asyncio

            client = redis_asyncio.from_url(settings.redis_url)
            lease = RedisLease(client, f"valet:telegram:poller:{bot_id(token)}",
                               ttl_seconds=REDIS_POLLER_LEASE_SECONDS)
            # The lease is renewed before each long poll, so a poll must end well within it;
            # a shorter poll lets another web process take over soon after this one dies.
            kwargs.setdefault("poll_timeout", REDIS_POLL_SECONDS)
        else:
            lease = FileLease(lease_file(settings.database_url, token))
        llm = settings.llm

        async def is_known(address: str) -> bool:
            return await host.identities.resolve("telegram", address) is not None

        return cls(settings.telegram, door=host.door, lines=host.lines,
                   menu=host.commands.menu(CHANNEL), owner_chats=settings.owner.telegram_ids,
                   is_known=is_known, lease=lease,
                   hears_voice=bool(llm.transcription_model), vision=llm.vision,
                   body_limits=BodyLimits(timeout_seconds=settings.http.body_timeout_seconds,
                                          max_bytes=MAX_UPDATE_BYTES),
                   health=host.health, spool=host.spool, now=host.clock.now, **kwargs)

    @property
    def username(self) -> str:
        """The bot's @name, once started (getMe)."""
        return self.inbound.me.username if self.inbound.me is not None else ""

    @property
    def ready(self) -> bool:
        """Updates reach Valet through this process now (it polls, or stands by for the
        process that polls, or Telegram posts to its webhook)."""
        return self.poller.receiving if self._poller is not None else self._receiving

    @property
    def status(self) -> str:
        """What receiving does now, as /readyz says it."""
        return self.poller.status if self._poller is not None else self._status

    # --- ServedChannel ---------------------------------------------------------------------

    def routes(self) -> list[web.RouteDef]:
        if self.settings.mode != "webhook":
            return []
        return [web.post(WEBHOOK_PATH, self._webhook)]

    async def start(self) -> None:
        """Receive (a web or all-in-one process). The command menu is set too when this
        process has the command table (a web process's is empty: its workers set it). The
        Bot API out of reach: marked down and tried again in the background."""
        self._accepting = True
        await self._reach_or_retry(receiving=True)

    async def prepare(self) -> None:
        """A process that only sends (a worker): the command menu from its command table."""
        await self._reach_or_retry(receiving=False)

    async def _reach_or_retry(self, *, receiving: bool) -> None:
        if await self._reach(receiving=receiving, attempt=1):
            return
        self._reaching = asyncio.create_task(self._keep_reaching(receiving=receiving))

    async def _keep_reaching(self, *, receiving: bool) -> None:
        attempt = 1
        while True:
            delay = backoff_delay(attempt, base=self.reach_retry_seconds,
                                  cap=REACH_RETRY_CAP_SECONDS)
            self._status += f"; trying again in {delay:.0f}s"
            await asyncio.sleep(delay)
            attempt += 1
            if await self._reach(receiving=receiving, attempt=attempt):
                return

    async def _reach(self, *, receiving: bool, attempt: int) -> bool:
        """getMe, the menu, then receiving (the webhook, or the poller): True once done;
        False (the channel marked down, the owner told once by a receiving process) when the
        Bot API cannot be reached or refuses the token."""
        try:
            await self.bot.initialize()
            me = self.bot.bot
            self.inbound.me = BotIdentity(me.id, me.username or "")
            if self.menu:
                await self._set_menu()
            if receiving and self.settings.mode == "webhook":
                url = await register_webhook(self.bot, self.settings)
                log.info("telegram: @%s receives updates by webhook at %s", me.username, url)
        except TelegramError as err:
            reason = unreachable_reason(err)
            self._status = f"down: {reason}"
            if attempt == 1 and self.health is not None:
                await self.health.channel_down(CHANNEL, reason, tell=receiving)
            elif attempt > 1:
                log.info("telegram: the Bot API still cannot be used (%s)", reason)
            return False
        if self.health is not None:
            self.health.channel_up(CHANNEL)
        if not receiving:
            self._status = "sending (a process that does not receive)"
        elif self.settings.mode == "webhook":
            self._receiving, self._status = True, "receiving by webhook"
        else:
            self._poller = asyncio.create_task(self.poller.run())
            log.info("telegram: @%s receives updates by long polling", me.username)
        if attempt > 1:
            log.warning("telegram: the Bot API answers again: the channel works")
        return True

    async def _set_menu(self) -> None:
        """The `/` menu from the command table (channels.telegram.checks.set_menu). A
        courtesy: a refusal is a warning, and messages go in and out all the same."""
        try:
            await set_menu(self.bot, self.menu, self.owner_chats)
        except InvalidToken:
            raise  # the token itself is refused: the channel is down
        except TelegramError as err:  # (getMe has just answered: Telegram is there)
            log.warning("telegram: the command menu was not set (%s); it is set again at the "
                        "next start", err)

    async def stop(self) -> None:
        """Take no new updates (the ones not yet confirmed come again at the next start)."""
        self._accepting = False
        for task in (self._reaching, self._poller):
            await cancel_and_wait(task)
        self._reaching = self._poller = None
        self._receiving, self._status = False, "stopped"
        await self.lease.release()

    async def close(self) -> None:
        """After the last replies went out."""
        self._receiving = False
        if self._reaching is not None:  # a worker's retry (it never stops receiving)
            await cancel_and_wait(self._reaching)
        with contextlib.suppress(TelegramError):
            await self.bot.shutdown()
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
            raw = await read_json_object(request, self.body_limits)
            if not isinstance(raw.get("update_id"), int):
                raise BodyError(400, "not an update: no update_id")
        except BodyError as err:
            return refused(request, err)
        dealt: list[bool] = []

        async def store() -> None:
            dealt.append(await self._deal_with_now(raw))

        try:
            # Durable before the answer: stored, or kept in the spool while it cannot be.
            kept = await store_or_keep(self.spool, UPDATE_KIND, raw, self.now(), store)
        except Exception as err:
            if dependency_of(err) is None:
                raise
            log.warning("telegram webhook: update %s not stored: %s", raw["update_id"], err)
            return web.Response(status=503, text="try again later")  # Telegram sends it again
        if not kept and not all(dealt):
            return web.Response(status=500)  # not even its failure could be recorded
        return web.Response(text="ok")

    async def _deal_with_now(self, raw: dict[str, Any]) -> bool:
        if self.inbound.me is None:  # the Bot API not reached yet: who "@valet" is unknown
            raise DependencyDown("telegram", "the bot has not reached the Bot API yet")
        return await self.updates.deal_with_raw(raw)

    async def _replay(self, raw: Mapping[str, Any], at: datetime) -> None:
        """An update kept in the spool, now stored (it keeps its own date)."""
        if not await self._deal_with_now(dict(raw)):
            raise RuntimeError(f"update {raw.get('update_id')}: not even its failure could "
                               "be recorded")


def unreachable_reason(err: TelegramError) -> str:
    """Why the Bot API cannot be used, in one line that never holds the token (PTB's own
    InvalidToken message does)."""
    if isinstance(err, InvalidToken):
        return "Telegram rejected the bot token: check VALET_TELEGRAM_TOKEN"
    return f"cannot reach the Telegram Bot API ({type(err).__name__}: {str(err.message)[:200]})"
