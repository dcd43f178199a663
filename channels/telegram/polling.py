"""Long polling: our own small loop over getUpdates, only while this process holds the bot's
lease (channels.telegram.lease). An update is confirmed to Telegram (the next call's offset)
only after the gateway has stored it, so a crash never loses one (PTB's `Updater` confirms a
batch as soon as it is queued, before anything has handled it). Within a batch, chats are
handled concurrently and one chat's updates in order; the handling itself is quick (the
gateway stores the message; turns, downloads and transcription come later, in the person's
queue), so one person's slow turn never delays another's button press. When the database is
away the batch is not confirmed: it stays with Telegram and comes again.

`receiving` and `status` say truthfully what it does now: polling, standing by for another
process's poller, or not polling and why (the lease out of reach with Redis, getUpdates
failing, the database away). A poll that failed says so until one succeeds.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from telegram import Bot, Update
from telegram.error import Conflict, RetryAfter, TelegramError

from bot.plumbing.outages import about, dependency_of, recovered
from channels.telegram.adapter import retry_after_seconds
from channels.telegram.checks import ALLOWED_UPDATES
from channels.telegram.lease import PollerLease
from channels.telegram.updates import Updates, parse_update

log = logging.getLogger(__name__)


class Poller:
    def __init__(self, bot: Bot, lease: PollerLease, updates: Updates, *, poll_timeout: int,
                 standby_seconds: float) -> None:
        self.bot = bot
        self.lease = lease
        self.updates = updates
        self.poll_timeout = poll_timeout
        self.standby_seconds = standby_seconds  # how often a process standing by looks
        self.receiving = False
        self.status = "starting the poller"
        self._poll_failing = False  # the last poll failed: not receiving until one works
        self._offset: int | None = None  # the first update not yet stored

    async def run(self) -> None:
        waiting_logged = False
        while True:
            try:
                held = await self.lease.acquire()
            except Exception as err:
                self._not_receiving("not polling: the poller's lease cannot be taken "
                                    f"({type(err).__name__}: {err})")
                self._poll_failing = False  # taking the lease again says it works
                log.warning("telegram: poller lease unavailable; trying again", exc_info=True)
                await asyncio.sleep(self.standby_seconds)
                continue
            if not held:
                self.receiving, self.status = True, "standing by: another process polls"
                self._poll_failing = False
                if not waiting_logged:
                    log.info("telegram: another process polls this bot; standing by")
                    waiting_logged = True
                await asyncio.sleep(self.standby_seconds)
                continue
            waiting_logged = False
            if not self._poll_failing:  # (a failing poll says so until one succeeds)
                self.receiving, self.status = True, "polling"
            await self._poll_once()

    def _not_receiving(self, status: str) -> None:
        self.receiving, self.status, self._poll_failing = False, status, True

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
            self._not_receiving(f"not polling: {err.message}")
            log.warning("telegram: %s", err.message)
            await asyncio.sleep(5.0)
            return
        except TelegramError as err:
            self._not_receiving(f"not polling: getUpdates failed ({err})")
            log.warning("telegram: polling failed (%s); trying again", err)
            await asyncio.sleep(2.0)
            return
        self.receiving, self.status, self._poll_failing = True, "polling", False
        last = max((u["update_id"] for u in raw_updates if isinstance(u.get("update_id"), int)),
                   default=None)
        if await self._deal_with_batch(raw_updates) and last is not None:
            self._offset = last + 1  # confirmed only once stored (or given up, recorded)
            recovered("database")
        elif raw_updates:
            # Not stored (the database is away), not even as failed: the batch comes again
            # (what was stored is a duplicate then).
            await asyncio.sleep(1.0)

    async def _deal_with_batch(self, raw_updates: list[dict[str, Any]]) -> bool:
        """Every update stored or given up (recorded): chats at once, each in order."""
        by_chat: dict[int, list[Update]] = {}
        dealt_with = True
        try:
            for raw in raw_updates:
                update = parse_update(raw, self.bot)
                if update is None:
                    dealt_with = await self.updates.unreadable(raw) and dealt_with
                    continue
                chat = update.effective_chat.id if update.effective_chat else 0
                by_chat.setdefault(chat, []).append(update)
            results = await asyncio.gather(*(self._handle_in_order(u)
                                             for u in by_chat.values()))
        except Exception as err:
            dependency = dependency_of(err)
            if dependency is None:
                raise
            self._not_receiving(f"not polling: the {dependency} cannot be reached (updates "
                                "wait in Telegram)")
            return False
        return dealt_with and all(results)

    async def _handle_in_order(self, updates: list[Update]) -> bool:
        for update in updates:
            try:
                if not await self.updates.deal_with(update):
                    return False
            except Exception as err:
                dependency = dependency_of(err)
                if dependency is None:
                    raise
                log.warning("telegram update %s waits in Telegram: %s", update.update_id,
                            err, extra=about(dependency))
                self._not_receiving(f"not polling: the {dependency} cannot be reached "
                                    "(updates wait in Telegram)")
                return False
        return True
