"""The one gate every message Valet sends passes, on every channel, just before it goes
(bot.gateway.delivery calls `Meter.admit` for each outbox row; the SMS sender refuses a row
the meter did not let out). In this order:

1. the block list: a blocked person gets nothing (Valet never answers STOP itself: the carrier
   confirms it, so nothing a carrier requires goes through here);
2. door replies (HELP/INFO, a picture alone, a picture with text): one of a kind at most once
   per `sms.door_reply_minutes` per person, on any channel (the rest of a long message after
   MORE is a door reply too, held to the allowance but not to this pace: see UNPACED);
3. the allowance: the message's price (the channel's `quote`: SMS, its segments at
   `sms.price_per_segment`) is counted before it goes. A person already at their allowance for
   the last 24 hours gets only the notice that says so, once in 24 hours; a notification
   (a reminder, a summary) waits until the window has room; anything else is not sent;
4. then the channel's own: the allowed countries and the segment cap (channels.sms.adapter,
   channels.sms.cut), on the message as the quote measured it.

A free channel (Telegram, the console) is quoted nothing: it is held to the block list and the
door replies' pace, never to the allowance.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from bot.channel import ChannelSender, Quote
from bot.contracts.clock import Clock
from bot.contracts.envelopes import OutboundMessage
from bot.meter.ledger import Ledger
from bot.people.users import UserStore
from bot.spend import Allowance, Spending, dollars, local_day

log = logging.getLogger(__name__)

DOOR = "door:"  # the kind of a reply a channel gives at its door: "door:help", "door:picture"
# The rest of a long message after MORE is a door reply not held to the pace: it is finite,
# each part is paid for, and a second MORE must not lose what the first left.
UNPACED = frozenset({"door:more"})
NOTICE = "budget"  # the notice that a person's allowance is spent (bot.gateway.budget)
NOTICE_KEY = "budget:"  # its outbox key's start


@dataclass(frozen=True)
class Verdict:
    go: bool
    reason: str = ""
    wait_until: datetime | None = None  # not now, but then (a notification at the allowance)


GO = Verdict(True)


def _paced(kind: str) -> bool:
    """A door reply held to one of its kind a while (HELP, a picture's answer, Telegram's
    "I can't read that")."""
    return kind.startswith(DOOR) and kind not in UNPACED


def kind_of(message: OutboundMessage) -> str:
    """What the meter calls the message: a door reply's kind, the allowance notice, or the
    outbox's kind ("reply", "notification", "edit:...")."""
    if message.kind.startswith(DOOR):
        return message.kind
    if message.user_id and message.dedupe_key.startswith(f"{NOTICE_KEY}{message.user_id}:"):
        return NOTICE  # the person's own (the owner's word about them is a notification)
    return message.kind


class Meter:
    def __init__(self, spending: Spending, allowance: Allowance, users: UserStore,
                 clock: Clock, *, door_reply_minutes: float = 10.0) -> None:
        self.spending = spending
        self.ledger = Ledger(spending.db)
        self.allowance = allowance
        self.users = users
        self.clock = clock
        self.door_reply = timedelta(minutes=door_reply_minutes)

    async def admit(self, message: OutboundMessage, sender: ChannelSender) -> Verdict:
        """Whether the message goes now; when it does, it is on the ledger (once: a retry of a
        message counted before goes without being counted again). A free channel's message is
        written there only when its kind is paced (a door reply, the notice)."""
        kind = kind_of(message)
        priced = sender.traits.priced  # its messages cost money: each is quoted
        kept = priced or _paced(kind) or kind == NOTICE
        if kept and await self.ledger.admitted(message.id):
            return GO  # counted when it was first let out; this is a retry
        now = self.clock.now()
        user = await self.users.get(message.user_id) if message.user_id else None
        if user is not None and user.blocked:
            return Verdict(False, "not sent: the person is blocked")
        if _paced(kind) and await self.ledger.sent_recently(
                message.user_id, message.channel, message.address, kind, now - self.door_reply):
            return Verdict(False, f"not sent: a {kind[len(DOOR):]} reply went to this person "
                                  f"less than {self.door_reply} ago")
        if kind == NOTICE and await self.ledger.sent_recently(
                message.user_id, message.channel, message.address, NOTICE,
                now - timedelta(hours=24)):
            return Verdict(False, "not sent: the allowance notice went out in the last 24 hours")
        quote = await sender.quote(message) if priced else Quote()
        if user is not None and quote.micros > 0:
            refused = await self._over(user.id, user.is_owner, kind, message, now)
            if refused is not None:
                return refused
        if not kept:
            return GO
        await self.ledger.message(
            outbox_id=message.id, user_id=message.user_id, channel=message.channel,
            address=message.address, kind=kind, at=now, micros=quote.micros,
            parts=quote.parts, segments=quote.segments)
        if user is not None and quote.micros:  # the report by day (/usage, valet budget)
            await self.spending.add(user.id, local_day(user.timezone, now),
                                    messages=quote.micros)
        return GO

    async def _over(self, user_id: str, is_owner: bool, kind: str, message: OutboundMessage,
                    now: datetime) -> Verdict | None:
        """None when the person may be sent a message that costs; else why not."""
        spent = await self.ledger.window(user_id, now)
        limit = self.allowance.today(is_owner, spent)
        if limit is None or spent.total < limit:
            return None
        if kind == NOTICE:
            return None  # once in 24 hours (admit), whatever the allowance
        over = f"at the allowance ({dollars(spent.total)} of {dollars(limit)} in 24 hours)"
        if kind == "notification":
            return Verdict(False, f"waits: {over}",
                           wait_until=await self.ledger.frees_at(user_id, now))
        log.info("%s %s: %s not sent", user_id, over, kind)
        return Verdict(False, f"not sent: {over}")

    async def may_call(self, user_id: str, is_owner: bool, worst: int) -> bool:
        """An LLM call that may cost up to `worst` may go: the person's last 24 hours and it
        stay within their allowance."""
        if self.allowance.base(is_owner) is None:
            return True
        spent = await self.ledger.window(user_id, self.clock.now())
        limit = self.allowance.today(is_owner, spent)
        return limit is None or spent.total + worst <= limit
