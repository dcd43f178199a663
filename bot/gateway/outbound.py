"""Everything that leaves Valet, in one place: the outbox (every message durable before it is
sent), its deliverer, notifications routed by person, and prompt messages edited once they
are settled. Built before the turn's parts, so commands, tools and triggers can reach a
person without knowing the inbound gateway.

    reply      -> queue_reply(tx, ...)   the turn's answer, in the transaction that closes
                                         the inbox row
    notice     -> notify(Notification)   routed to the person's channel, quiet hours kept
    short one  -> answer_directly(...)   a channel's fixed answer to a known address
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from bot.channel import ChannelSender
from bot.contracts.clock import Clock
from bot.contracts.envelopes import (
    ApprovalPrompt,
    Delivery,
    EventSink,
    LoopEvent,
    Notification,
    Urgency,
)
from bot.contracts.people import User
from bot.db import Database, Queries
from bot.gateway.delivery import OutboxDeliverer
from bot.gateway.health import ChannelHealth, Outage
from bot.gateway.notify import Notifier, Reachable
from bot.gateway.outbox import Lane, OutboxStore
from bot.gateway.prompt_edits import PromptEdits
from bot.people.users import UserStore
from persona.lines import fill
from persona.speaking import speaking_to

# A notice's text, or how to write it: composed for each recipient in their language.
Said = str | Callable[[], str]

log = logging.getLogger(__name__)


@dataclass
class Outbound:
    db: Database
    clock: Clock
    users: UserStore
    outbox: OutboxStore
    deliverer: OutboxDeliverer
    notifier: Notifier
    # The channels this process sends on, by name; channels register when they start.
    senders: dict[str, ChannelSender]
    prompt_edits: PromptEdits | None = None
    # A process that delivers nothing itself (web, scheduler) tells the workers instead
    # (bot.work.relay): called with (channel, address), or (None, None) for "look at all".
    wake_elsewhere: Callable[[str | None, str | None], None] | None = None

    # What owners are told when a channel goes down ({channel}, {reason}): read when said.
    channel_down_line: Said = ""

    def __post_init__(self) -> None:
        self._delivery: asyncio.Task[None] | None = None
        self.deliverer.on_down = self._channel_down  # its outages are ours to tell
        self.deliverer.language_of = self.users.language_of  # a channel's own lines: theirs

    @property
    def health(self) -> ChannelHealth:
        return self.deliverer.health

    async def _channel_down(self, channel: str, outage: Outage) -> None:
        """The owners hear once per outage, on another channel where they have one."""
        if self.channel_down_line:
            line = self.channel_down_line
            await self.notify_owner(
                lambda: fill(line() if callable(line) else line, channel=channel,
                             reason=outage.reason),
                dedupe_key=f"channel-down:{channel}:{outage.since.isoformat()}")

    async def channel_down(self, channel: str, reason: str, *, tell: bool = True) -> None:
        """A channel that cannot be used at all (its API out of reach at start, its token
        refused): down until `channel_up` or a message goes through it; owners told once
        (`tell`), on another channel where they have one (bot.gateway.door.ChannelStatus)."""
        outage = self.health.down(channel, reason, self.clock.now())
        if outage is None or not tell:
            return
        try:
            await self._channel_down(channel, outage)
        except Exception:  # telling is a courtesy; the channel is tried again all the same
            log.warning("telling the owner that %s is down failed", channel, exc_info=True)

    def channel_up(self, channel: str) -> None:
        """The channel works again: its waiting messages go."""
        if self.health.up(channel):
            self.wake()

    # --- lifecycle -------------------------------------------------------------------------

    def add_channel(self, sender: ChannelSender) -> None:
        """Messages for this channel are delivered through `sender` from now on."""
        self.senders[sender.name] = sender

    def sender(self, channel: str) -> ChannelSender | None:
        return self.senders.get(channel)

    async def typing(self, channel: str, address: str) -> None:
        """A turn is under way, shown where its channel shows it (its traits say `typing`)."""
        sender = self.senders.get(channel)
        if sender is None or not sender.traits.typing:
            return
        try:
            await sender.typing(address)
        except Exception:  # a courtesy: the turn goes on
            log.debug("typing indicator failed", exc_info=True)

    def progress(self, channel: str, address: str) -> EventSink | None:
        """Where a running turn's events go, on a channel that shows them (traits.progress);
        None: nowhere."""
        sender = self.senders.get(channel)
        if sender is None or not sender.traits.progress:
            return None
        show = sender.progress

        async def emit(event: LoopEvent) -> None:
            try:
                await show(address, event)
            except Exception:  # progress is a courtesy; the reply still matters
                log.debug("progress display failed", exc_info=True)

        return emit

    def start(self) -> None:
        self._delivery = asyncio.create_task(self.deliverer.run())

    async def stop(self) -> None:
        self.deliverer.stop()
        if self._delivery:
            with contextlib.suppress(asyncio.CancelledError):
                await self._delivery

    def wake(self, channel: str | None = None, address: str | None = None) -> None:
        """Something was queued (for this address, when the caller knows it): deliver now
        rather than at the next poll."""
        if self.wake_elsewhere is not None:
            self.wake_elsewhere(channel, address)
        elif channel is not None and address is not None:
            self.deliverer.wake_address(channel, address)
        else:
            self.deliverer.wake()

    async def in_flight(self) -> bool:
        """Something is due now or being sent right now."""
        return await self.outbox.in_flight(self.clock.now())

    # --- queueing --------------------------------------------------------------------------

    async def queue_reply(self, q: Queries, *, dedupe_key: str, user_id: str | None,
                          channel: str, address: str, text: str,
                          payload: dict[str, Any] | None = None) -> int | None:
        """A reply to an address, in the caller's transaction (wake the deliverer after it
        commits). None when a message with this key was queued before. Urgent: the person
        is waiting for it (it goes before their bulk, never behind anyone else's)."""
        return await self.outbox.enqueue(q, dedupe_key=dedupe_key, user_id=user_id,
                                         channel=channel, address=address, text=text,
                                         at=self.clock.now(), lane=Lane.URGENT,
                                         payload=payload)

    async def answer_directly(self, channel: str, address: str, text: str, *,
                              dedupe_key: str, user_id: str | None = None,
                              kind: str = "reply") -> None:
        """A channel's short answer that needs no turn (media Valet cannot read yet), once per
        key (the channel's own id of what it answers: a redelivered update is answered once).
        `kind`: what the meter calls it (bot.meter.gate)."""
        await self.queue_reply(self.db, dedupe_key=dedupe_key, user_id=user_id,
                               channel=channel, address=address, text=text,
                               payload={"kind": kind} if kind != "reply" else None)
        self.wake()

    async def route(self, user_id: str, wanted: str | None,
                    fallback: str | None = None) -> Reachable | None:
        """Where a message for this person goes now (bot.gateway.notify)."""
        return await self.notifier.route(user_id, wanted, fallback)

    async def notify(self, note: Notification, q: Queries | None = None) -> Delivery:
        """A message for a person that no inbound message asked for (see bot.gateway.notify):
        routed to their channel, quiet hours respected, through the outbox."""
        delivery = await self.notifier.notify(note, q)
        self.wake()
        return delivery

    async def notify_user(self, user: User, text: str, *, dedupe_key: str,
                          channel: str | None = None, q: Queries | None = None,
                          urgency: Urgency = Urgency.URGENT) -> bool:
        """A notice about the person's own conversation (an expiry, "you're in"): sent now."""
        return await self.notify(Notification(user.id, text, dedupe_key, channel=channel,
                                              urgency=urgency), q) is Delivery.QUEUED

    async def notify_owner(self, text: Said, *, dedupe_key: str,
                           prompts: tuple[ApprovalPrompt, ...] = (),
                           q: Queries | None = None) -> bool:
        """Every owner is told, once per key (`q`: the caller's transaction; it wakes the
        deliverer again once it commits). `text` composed by a function is written for each
        owner in their own language (a notice about Ana is in the owner's)."""
        owners = [u for u in await self.users.list() if u.is_owner]
        sent = False
        for owner in owners:
            if callable(text):
                with speaking_to(owner.language):
                    said = text()
            else:
                said = text
            sent |= await self.notify(Notification(
                owner.id, said, f"{dedupe_key}:{owner.id}", urgency=Urgency.URGENT,
                prompts=prompts), q) is Delivery.QUEUED
        return sent

    async def settle_prompts(self, user_id: str, corrected: Sequence[str] = ()) -> None:
        """Prompts decided, expired or interrupted: their messages say so (where the channel
        can edit); `corrected`: requests whose outcome changed since their card said it. A
        courtesy: a failure here is logged and tried again after the next turn."""
        if self.prompt_edits is None:
            return
        try:
            if corrected:
                await self.prompt_edits.reopen(user_id, corrected)
            if await self.prompt_edits.settle(user_id):
                self.wake()
        except Exception:
            log.warning("editing settled prompts of %s failed", user_id, exc_info=True)
