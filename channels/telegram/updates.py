"""One Telegram update, dealt with, whichever way it came (a long poll or the webhook).

Nothing one update does can stop the others. Each is parsed on its own (one in a shape
python-telegram-bot cannot read is given up at once); one whose handling fails is tried again
a few times (`UpdateTries`), each failure counted in the database under its update id (a
restart goes on counting), then recorded as failed with its reason, its sender told once.

An outage is not the update's fault: when the database (or Redis) cannot be reached, the error
goes to the caller, uncounted, and nothing is given up. The poller then leaves the batch with
Telegram (it comes again); the webhook keeps the update in the spool (bot.plumbing.spool).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from telegram import Bot, Update

from bot.gateway.door import Door
from bot.plumbing.backoff import backoff_delay
from bot.plumbing.outages import dependency_of
from channels.telegram.inbound import CHANNEL, InboundHandler
from channels.telegram.kinds import member_address

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class UpdateTries:
    """How hard one update is tried before it is given up."""

    tries: int = 3  # counted across restarts
    # Doubled after each failed try. Short: the batch (everyone's next updates) waits for
    # these tries, and what makes a store fail for a moment (a dropped connection) is gone
    # by the next try; what does not go away is given up, not waited out.
    retry_seconds: float = 0.01
    timeout_seconds: float = 10.0  # one try that takes longer has failed


class Updates:
    def __init__(self, inbound: InboundHandler, door: Door, bot: Bot,
                 tries: UpdateTries | None = None) -> None:
        self.inbound = inbound
        self.door = door
        self.bot = bot
        self.tries = tries or UpdateTries()

    async def deal_with_raw(self, raw: dict[str, Any]) -> bool:
        """The update's JSON, parsed and dealt with (see `deal_with`)."""
        update = parse_update(raw, self.bot)
        if update is None:
            return await self.unreadable(raw)
        return await self.deal_with(update)

    async def deal_with(self, update: Update) -> bool:
        """True once the update is dealt with: handled, or given up after `tries.tries`
        failures (recorded as failed, its sender told once). False only when its failure
        could not even be recorded: the caller must not confirm it. An outage is raised."""
        tries, attempt = self.tries, 0
        while True:  # ends: every failure is counted, and `tries.tries` of them give up
            attempt += 1
            try:
                async with asyncio.timeout(tries.timeout_seconds):
                    await self.inbound.handle(update)
                return True
            except Exception as err:
                if dependency_of(err) is not None:
                    raise
                reason = f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
                log.warning("telegram update %s not handled (try %d): %s", update.update_id,
                            attempt, reason, exc_info=attempt == 1)
            try:
                failed = await self.door.count_failure(CHANNEL, str(update.update_id), reason)
                if failed >= tries.tries:
                    await self.inbound.give_up(update.update_id, sender_of(update), reason)
                    return True
            except Exception as err:
                if dependency_of(err) is not None:
                    raise
                log.exception("telegram update %s: its failure could not be recorded",
                              update.update_id)
                return False
            await asyncio.sleep(backoff_delay(attempt, base=tries.retry_seconds,
                                              cap=10 * tries.retry_seconds))

    async def unreadable(self, raw: dict[str, Any]) -> bool:
        """An update PTB cannot parse: given up at once (parsing it again changes nothing).
        False when even that could not be recorded; an outage is raised."""
        update_id = raw.get("update_id")
        if not isinstance(update_id, int):
            log.warning("telegram sent an update without an id; ignored")
            return True
        try:
            await self.inbound.give_up(update_id, sender_of_raw(raw), "unreadable update")
        except Exception as err:
            if dependency_of(err) is not None:
                raise
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
