"""Notifications by user: a message no inbound message asked for, routed to a person.

    route: the named channel, else the user's preferred one, else another linked channel
           that has a sender; never an identity that opted out or cannot be reached
    when:  URGENT at once; anything else waits out the person's quiet hours (in their
           timezone) and goes once when they end
    how:   through the outbox like every reply (ordered, retried, exactly once per key); URGENT
           ones and prompts in the address's urgent lane, the rest as bulk
"""

from __future__ import annotations

import logging
from collections.abc import Container, Mapping
from dataclasses import dataclass
from datetime import datetime, time, timedelta
from zoneinfo import ZoneInfo

from bot.channel import ChannelSender
from bot.contracts.clock import Clock
from bot.contracts.envelopes import Delivery, Notification, Urgency, payload_of
from bot.contracts.people import User
from bot.db import Database, Queries
from bot.gateway.health import ChannelHealth
from bot.gateway.outbox import Lane, OutboxStore
from bot.people.identity import IdentityStore
from bot.people.users import UserStore

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Reachable:
    """One identity a person can be reached on now."""

    channel: str
    address: str


def quiet_until(user: User, now: datetime) -> datetime | None:
    """When the person's quiet hours end, if `now` falls inside them (UTC); else None."""
    if not (user.quiet_hours_start and user.quiet_hours_end):
        return None
    tz = ZoneInfo(user.timezone)
    local = now.astimezone(tz)
    start, end = _hhmm(user.quiet_hours_start), _hhmm(user.quiet_hours_end)
    if start == end:
        return None
    at = local.time().replace(second=0, microsecond=0)
    inside = (start <= at < end) if start < end else (at >= start or at < end)
    if not inside:
        return None
    day = local.date() if (start < end or at < end) else local.date() + timedelta(days=1)
    ends = datetime.combine(day, end, tzinfo=tz)
    # Round-tripping through UTC moves a wall time skipped by a DST jump past the gap.
    return ends.astimezone(ZoneInfo("UTC"))


def lane_of(note: Notification) -> Lane:
    """Urgent notices and prompts (someone waits for the answer) go before an address's bulk:
    reminders, summaries, what a triggered run found."""
    return Lane.URGENT if note.urgency is Urgency.URGENT or note.prompts else Lane.BULK


def _hhmm(text: str) -> time:
    hours, minutes = text.split(":", 1)
    return time(int(hours), int(minutes))


@dataclass(frozen=True)
class RoutableSenders:
    """The channels a notification may fall back to: every registered sender but those that
    only show a conversation (`routable = False`: the owner's terminal beside `valet serve`),
    so a reminder goes to the person's phone, not to a window that may be closed."""

    senders: Mapping[str, ChannelSender]

    def __contains__(self, channel: object) -> bool:
        sender = self.senders.get(str(channel))
        return sender is not None and sender.routable

    def __bool__(self) -> bool:
        return any(name in self for name in self.senders)


class Notifier:
    def __init__(self, db: Database, users: UserStore, identities: IdentityStore,
                 outbox: OutboxStore, clock: Clock, senders: Container[str],
                 health: ChannelHealth | None = None) -> None:
        self.health = health or ChannelHealth()  # a channel that is down is the last choice
        self.db = db
        self.users = users
        self.identities = identities
        self.outbox = outbox
        self.clock = clock
        self.senders = senders

    async def route(self, user_id: str, wanted: str | None,
                    fallback: str | None = None) -> Reachable | None:
        """Where a message for this person goes now: `wanted`, else their preferred channel,
        else `fallback` (where a task was set), else any channel this process sends on; None
        when nowhere."""
        user = await self.users.get(user_id)
        if user is None:
            return None
        writable = [Reachable(i.channel, i.address)
                    for i in await self.identities.of_user(user_id) if i.writable]
        # Where a task was set counts only if this process can send there as a route (a
        # reminder set at the terminal beside `valet serve` reaches the phone when it fires).
        if fallback and self.senders and fallback not in self.senders:
            fallback = None
        # Channels that work first; one that is down only when nothing else reaches them (the
        # message then waits there until it works again).
        writable.sort(key=lambda r: self.health.is_down(r.channel))
        for choice in (wanted, user.preferred_channel, fallback):
            found = next((r for r in writable if choice and r.channel == choice), None)
            if found is not None:
                return found
        # Another linked channel this process can send on; a process with none (the admin
        # CLI's `valet tasks run-now`) queues for whichever process runs the channels.
        return next((r for r in writable if r.channel in self.senders or not self.senders),
                    None)

    async def send_after(self, user_id: str, urgency: Urgency,
                         not_before: datetime | None) -> datetime | None:
        """The earliest delivery time: quiet hours hold anything that is not urgent."""
        if urgency is Urgency.URGENT:
            return not_before
        user = await self.users.get(user_id)
        now = self.clock.now()
        at = max(not_before or now, now)
        held = quiet_until(user, at) if user is not None else None
        return held or not_before

    async def notify(self, note: Notification, q: Queries | None = None) -> Delivery:
        """Queue the notification, once per dedupe key; UNREACHABLE when no channel reaches
        the person now."""
        target = await self.route(note.user_id, note.channel, note.fallback_channel)
        if target is None:
            log.info("no reachable channel for %s (%s)", note.user_id, note.dedupe_key)
            return Delivery.UNREACHABLE
        not_before = await self.send_after(note.user_id, note.urgency, note.not_before)
        queued = await self.outbox.enqueue(
            q or self.db, dedupe_key=note.dedupe_key, user_id=note.user_id,
            channel=target.channel, address=target.address, text=note.text,
            at=self.clock.now(), not_before=not_before, lane=lane_of(note),
            payload=payload_of(note.prompts, None, {"kind": "notification"}))
        return Delivery.QUEUED if queued is not None else Delivery.ALREADY_QUEUED
