"""Messages a person has Valet send to someone else ("text Ana that I'm late"), as the tools
reach the outbox: a narrow service, never the gateway itself.

    where   a Valet user's writable Telegram chat, or any address on a channel that has a
            sender (SMS from Valet's number)
    refused an address that said STOP or cannot be written to; a sender over their daily
            number of such messages (counted from the outbox, so it survives a restart)
    once    one outbox row per key (the approval id): a retry or a second "yes" queues
            nothing more
    when    at once, unless the recipient is a Valet user inside their quiet hours: then
            when those end (their hours are theirs, whoever writes to them)

The message goes out like any other (ordered, retried, exactly once), with the sender as the
row's user (it is their message, and their cost); the recipient's answer is theirs: it
comes in through the access policy like anyone's, never into the sender's conversation.
What became of it is read back by the approval that sent it (`MessageEffects`): a message
that did not go, or whose sending was cut off, is told to the sender.
"""

from __future__ import annotations

from collections.abc import Callable, Container
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum

from bot.approvals.effects import Effect
from bot.contracts.approvals import ApprovalRequest, ExecutionStatus
from bot.contracts.clock import Clock
from bot.db import Database
from bot.gateway.notify import quiet_until
from bot.gateway.outbox import FateStatus, Lane, OutboxStore
from bot.people.identity import IdentityStore
from persona.lines import ApprovalLines, fill

KEY_PREFIX = "others:"
KIND = "on_behalf"  # the outbox payload's kind: neither a reply nor a notification
WINDOW = timedelta(hours=24)


class SendOutcome(Enum):
    QUEUED = "queued"
    ALREADY_QUEUED = "already_queued"  # the same key was queued before: nothing new
    OPTED_OUT = "opted_out"  # the address said STOP
    UNREACHABLE = "unreachable"  # a permanent send failure marked it
    NO_CHANNEL = "no_channel"  # this server does not send on that channel
    DAILY_LIMIT = "daily_limit"


@dataclass(frozen=True)
class Sent:
    outcome: SendOutcome
    sent_today: int  # messages to others in the last 24 hours, this one included if queued
    limit: int
    held_until: datetime | None = None  # queued for when the recipient's quiet hours end


class OutboxMessenger:
    """The `messages_to_others` service: what `message_someone` uses to reach the outbox."""

    def __init__(self, db: Database, outbox: OutboxStore, identities: IdentityStore,
                 clock: Clock, senders: Container[str], wake: Callable[[], None], *,
                 max_per_day: int, assistant_name: str) -> None:
        self.db = db
        self.outbox = outbox
        self.identities = identities
        self.clock = clock
        self.senders = senders
        self.wake = wake
        self.max_per_day = max_per_day
        self.assistant_name = assistant_name

    async def user_at(self, channel: str, address: str) -> str | None:
        """The Valet user this address belongs to, if any."""
        identity = await self.identities.get(channel, address)
        return identity.user_id if identity else None

    async def chat_of(self, user_id: str, channel: str) -> str | None:
        """A Valet user's address on `channel` that can be written to, when this server runs
        that channel."""
        if channel not in self.senders:
            return None
        for identity in await self.identities.of_user(user_id):
            if identity.channel == channel and identity.opted_out_at is None \
                    and identity.unreachable_at is None:
                return identity.address
        return None

    async def sent_today(self, sender_id: str) -> int:
        return int(await self.db.fetchval(
            "SELECT COUNT(*) FROM outbox WHERE user_id = $1 AND dedupe_key LIKE $2"
            " AND created_at >= $3", sender_id, KEY_PREFIX + "%",
            self.clock.now() - WINDOW) or 0)

    async def check(self, sender_id: str, channel: str, address: str) -> Sent:
        """Whether a message could go now (QUEUED: yes), without queueing anything."""
        count = await self.sent_today(sender_id)
        return Sent(await self._refusal(channel, address, count) or SendOutcome.QUEUED,
                    count, self.max_per_day)

    async def send(self, sender_id: str, channel: str, address: str, text: str, *,
                   key: str) -> Sent:
        """Queue the message once per key, unless it is refused."""
        dedupe_key = KEY_PREFIX + key
        if await self.db.fetchval("SELECT 1 FROM outbox WHERE dedupe_key = $1",
                                  dedupe_key) is not None:
            return Sent(SendOutcome.ALREADY_QUEUED, await self.sent_today(sender_id),
                        self.max_per_day)
        count = await self.sent_today(sender_id)
        refused = await self._refusal(channel, address, count)
        if refused is not None:
            return Sent(refused, count, self.max_per_day)
        now = self.clock.now()
        held = await self._quiet_until(channel, address, now)
        queued = await self.outbox.enqueue(
            self.db, dedupe_key=dedupe_key, user_id=sender_id, channel=channel,
            address=address, text=text, at=now, payload={"kind": KIND}, not_before=held,
            lane=Lane.URGENT)  # a person's own words to someone, just approved
        if queued is None:  # a concurrent run of the same key won
            return Sent(SendOutcome.ALREADY_QUEUED, count, self.max_per_day)
        self.wake()
        return Sent(SendOutcome.QUEUED, count + 1, self.max_per_day, held_until=held)

    async def _quiet_until(self, channel: str, address: str, now: datetime) -> datetime | None:
        """When the recipient's quiet hours end, if the address is a Valet user's and they are
        inside them now."""
        identity = await self.identities.get(channel, address)
        user = await self.identities.users.get(identity.user_id) if identity else None
        return quiet_until(user, now) if user is not None else None

    async def _refusal(self, channel: str, address: str, count: int) -> SendOutcome | None:
        if channel not in self.senders:
            return SendOutcome.NO_CHANNEL
        if await self.identities.opted_out(channel, address):
            return SendOutcome.OPTED_OUT
        identity = await self.identities.get(channel, address)
        if identity is not None and identity.unreachable_at is not None:
            return SendOutcome.UNREACHABLE
        if count >= self.max_per_day:
            return SendOutcome.DAILY_LIMIT
        return None


class MessageEffects:
    """Where an approved message to someone waits: its outbox row, keyed by the approval id
    (bot.approvals.effects.EffectRecords)."""

    key = "outbox"

    def __init__(self, outbox: OutboxStore, lines: ApprovalLines) -> None:
        self.outbox = outbox
        self.lines = lines

    async def effect(self, approval: ApprovalRequest) -> Effect | None:
        fate = await self.outbox.fate(KEY_PREFIX + approval.id)
        if fate is None:  # nothing was queued under it: nothing to follow
            return Effect(ExecutionStatus.EXECUTED)
        if fate.status is FateStatus.ON_ITS_WAY:
            return None
        if fate.status is FateStatus.SENT:
            return Effect(ExecutionStatus.EXECUTED)
        arguments = approval.arguments
        recipient = str(arguments.get("recipient") or arguments.get("to") or "")
        if fate.status is FateStatus.UNKNOWN:
            message = str(arguments.get("message") or arguments.get("text") or "")
            return Effect(ExecutionStatus.UNKNOWN, fate.error, line=fill(
                self.lines.approval_message_unknown, recipient=recipient, message=message))
        return Effect(ExecutionStatus.FAILED, fate.error, line=fill(
            self.lines.approval_message_failed, recipient=recipient, reason=fate.error))
