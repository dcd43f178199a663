"""The Telegram channel as `valet serve` runs it: python-telegram-bot inside Valet's own event
loop (never `run_polling`, which owns the loop), long polling or a webhook on Valet's server.

Polling is our own small loop over getUpdates: an update is confirmed to Telegram (the next
call's offset) only after the gateway has stored it, so a crash never loses one (PTB's
`Updater` confirms a batch as soon as it is queued, before anything has handled it). Within a
batch, chats are handled concurrently and one chat's updates in order; the handling itself is
quick (the gateway stores the message; turns, downloads and transcription come later, in the
person's queue), so one person's slow turn never delays another's button press. Only the
holder of the bot's lease polls.

Nothing one update does can stop the others. Each update is parsed on its own (one Telegram
sends in a shape python-telegram-bot cannot read is given up at once, not the whole batch);
one whose handling fails is tried again a few times (`UpdateTries`), each failure counted in
the database under its update id (a restart goes on counting), then recorded as failed with
its reason, its sender told once, and the offset moves on. Only when even that record cannot
be written (the database is away) does the batch wait and come again.

Webhook mode: Telegram posts to /telegram/webhook with the secret token header; a missing or
wrong secret gets 403 before anything is parsed or stored (compared in constant time). The
body is read with a limit, a depth and a time bound (bot.plumbing.request_body): what is not an
update gets 400. An update is tried the same way; it is answered 200 once it is stored or given up,
500 (Telegram sends it again) only when the database is away.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import re
import warnings
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from aiohttp import web
from telegram import Bot, Update
from telegram.error import Conflict, RetryAfter, TelegramError
from telegram.request import HTTPXRequest
from telegram.warnings import PTBUserWarning

from bot.channel import MenuCommand
from bot.config import ConfigError, Settings, TelegramSettings
from bot.gateway.door import ChannelHost, Door
from bot.plumbing.backoff import backoff_delay
from bot.plumbing.request_body import BodyError, BodyLimits, read_json_object, refused
from channels.telegram.adapter import TelegramChannel, retry_after_seconds
from channels.telegram.checks import ALLOWED_UPDATES as ALLOWED_UPDATES
from channels.telegram.checks import DEFAULT_API_URL, register_webhook, set_menu
from channels.telegram.checks import WEBHOOK_PATH as WEBHOOK_PATH
from channels.telegram.checks import bot_commands as bot_commands
from channels.telegram.checks import webhook_url as webhook_url
from channels.telegram.inbound import (
    CHANNEL,
    BotIdentity,
    InboundHandler,
    InboundSettings,
    member_address,
)
from channels.telegram.lease import FileLease, PollerLease, RedisLease, bot_id, lease_file
from channels.telegram.limiter import OutboundLimiter
from persona.lines import TelegramLines

log = logging.getLogger(__name__)

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
MAX_UPDATE_BYTES = 1024 * 1024  # a webhook body (a real update is a few kilobytes)
_SECRET_FORMAT = re.compile(r"[A-Za-z0-9_-]{1,256}")
# Several web processes (Redis): one polls, the others stand by. A poller killed outright
# holds the lease until it expires; these bound how long Telegram's messages then wait
# (at most the lease plus one stand-by look, about 25 s).
REDIS_POLLER_LEASE_SECONDS = 20.0
REDIS_POLL_SECONDS = 8
# Updates arrive as JSON and are parsed one by one (see `_fetch`): PTB's own get_updates parses
# the whole batch at once, and asking for the raw call by its name makes PTB suggest it.
warnings.filterwarnings("ignore", message=r"Please use 'Bot\.getUpdates'",
                        category=PTBUserWarning)


@dataclass(frozen=True)
class UpdateTries:
    """How hard one update is tried before it is given up."""

    tries: int = 3  # counted across restarts
    # Doubled after each failed try. Short: the batch (everyone's next updates) waits for
    # these tries, and what makes a store fail for a moment (a dropped connection) is gone
    # by the next try; what does not go away is given up, not waited out.
    retry_seconds: float = 0.01
    timeout_seconds: float = 10.0  # one try that takes longer has failed


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
                 body_limits: BodyLimits | None = None,
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
            door, self.channel, is_known=is_known,
            settings=InboundSettings(groups=settings.groups, vision=vision,
                                     hears_voice=hears_voice), lines=lines, now=now)
        self.door = door
        self.menu = list(menu)  # the command table's commands for Telegram (bot.turn.commands)
        self.owner_chats = list(owner_chats)  # their menu lists the owner's commands too
        self.lease = lease
        self.poll_timeout = poll_timeout
        # How often a process that stands by looks whether the poller's lease is free.
        self.standby_seconds = min(5.0, poll_timeout / 2)
        self.tries = tries or UpdateTries()
        self.body_limits = body_limits or BodyLimits()
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
                   now=host.clock.now, **kwargs)

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
        """Receive (a web or all-in-one process). The command menu is set too when this
        process has the command table (a web process's is empty: its workers set it)."""
        await self.bot.initialize()
        me = self.bot.bot
        self.inbound.me = BotIdentity(me.id, me.username or "")
        if self.menu:
            await self._set_menu()
        self._accepting = True
        if self.settings.mode == "webhook":
            url = await register_webhook(self.bot, self.settings)
            log.info("telegram: @%s receives updates by webhook at %s", me.username, url)
        else:
            self._poller = asyncio.create_task(self._poll_while_leased())
            log.info("telegram: @%s receives updates by long polling", me.username)
        self.ready = True

    async def prepare(self) -> None:
        """A process that only sends (a worker): the command menu from its command table."""
        await self.bot.initialize()
        await self._set_menu()

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
        update = parse_update(raw, self.bot)
        if update is None:
            if await self._unreadable(raw):
                return web.Response(text="ok")  # recorded; sending it again changes nothing
            return web.Response(status=500)
        if not await self._handle_with_tries(update):
            return web.Response(status=500)  # not even its failure could be recorded
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
                await asyncio.sleep(self.standby_seconds)
                continue
            waiting_logged = False
            await self._poll_once()

    async def _fetch(self) -> list[dict[str, Any]]:
        """getUpdates, each update left as JSON (PTB's get_updates parses the batch as one:
        one update it cannot read would stop every one behind it)."""
        result = await self.bot.do_api_request(
            "getUpdates", api_kwargs={"offset": self._offset, "timeout": self.poll_timeout,
                                      "allowed_updates": ALLOWED_UPDATES},
            read_timeout=self.poll_timeout + 10.0)
        return [u for u in result if isinstance(u, dict)] if isinstance(result, list) else []

    async def _poll_once(self) -> None:
        try:
            raw_updates = await self._fetch()
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
        dealt_with = True
        for raw in raw_updates:
            update = parse_update(raw, self.bot)
            if update is None:
                dealt_with = await self._unreadable(raw) and dealt_with
                continue
            chat = update.effective_chat.id if update.effective_chat else 0
            by_chat.setdefault(chat, []).append(update)
        results = await asyncio.gather(*(self._handle_in_order(u) for u in by_chat.values()))
        last = max((u["update_id"] for u in raw_updates if isinstance(u.get("update_id"), int)),
                   default=None)
        if dealt_with and all(results) and last is not None:
            self._offset = last + 1  # confirmed only once stored (or given up, recorded)
        elif raw_updates:
            # Not even a failure could be recorded (the database is away): the batch comes
            # again (what was stored is a duplicate then).
            await asyncio.sleep(1.0)

    async def _handle_in_order(self, updates: list[Update]) -> bool:
        for update in updates:
            if not await self._handle_with_tries(update):
                return False
        return True

    async def _handle_with_tries(self, update: Update) -> bool:
        """True once the update is dealt with: handled, or given up after `tries.tries`
        failures (recorded as failed, its sender told once). False only when its failure
        could not even be recorded: the caller must not confirm it."""
        tries, attempt = self.tries, 0
        while True:  # ends: every failure is counted, and `tries.tries` of them give up
            attempt += 1
            try:
                async with asyncio.timeout(tries.timeout_seconds):
                    await self.inbound.handle(update)
                return True
            except Exception as err:
                reason = f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
                log.warning("telegram update %s not handled (try %d): %s", update.update_id,
                            attempt, reason, exc_info=attempt == 1)
            try:
                failed = await self.door.count_failure(CHANNEL, str(update.update_id), reason)
                if failed >= tries.tries:
                    await self.inbound.give_up(update.update_id, sender_of(update), reason)
                    return True
            except Exception:
                log.exception("telegram update %s: its failure could not be recorded",
                              update.update_id)
                return False
            await asyncio.sleep(backoff_delay(attempt, base=tries.retry_seconds,
                                              cap=10 * tries.retry_seconds))

    async def _unreadable(self, raw: dict[str, Any]) -> bool:
        """An update PTB cannot parse: given up at once (parsing it again changes nothing).
        False when even that could not be recorded."""
        update_id = raw.get("update_id")
        if not isinstance(update_id, int):
            log.warning("telegram sent an update without an id; ignored")
            return True
        try:
            await self.inbound.give_up(update_id, sender_of_raw(raw), "unreadable update")
        except Exception:
            log.exception("telegram update %s: unreadable, and not recorded", update_id)
            return False
        return True


def parse_update(raw: dict[str, Any], bot: Bot) -> Update | None:
    """The update, or None (logged) when it has a shape PTB cannot read."""
    try:
        update = Update.de_json(raw, bot)
    except Exception as err:
        log.warning("telegram update %s unreadable: %s: %s", raw.get("update_id"),
                    type(err).__name__, err)
        return None
    if update is None or not isinstance(update.update_id, int):
        return None
    return update


def sender_of(update: Update) -> str | None:
    """Who an update came from, as Valet addresses them: the chat, or a group's member."""
    chat, user = update.effective_chat, update.effective_user
    if chat is None:
        return None
    in_group = chat.type != "private" and user is not None
    return member_address(chat.id, user.id if in_group and user is not None else None)


def sender_of_raw(raw: dict[str, Any]) -> str | None:
    """The same for an update's JSON that could not be read as an update."""
    for key in ("message", "edited_message", "callback_query"):
        part = raw.get(key)
        if not isinstance(part, dict):
            continue
        sender = part.get("from")
        if key == "callback_query":
            part = part.get("message")
        chat = part.get("chat") if isinstance(part, dict) else None
        if isinstance(chat, dict) and isinstance(chat.get("id"), int):
            user = sender.get("id") if isinstance(sender, dict) else None
            in_group = chat.get("type") != "private" and isinstance(user, int)
            return member_address(int(chat["id"]), user if in_group else None)
    return None
