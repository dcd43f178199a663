"""The outbound side as every process role builds it (bot.app.root.App, bot.app.front.Front):
the outbox and its deliverer, notifications, prompt edits (with what became of approval and
pairing prompts), and what a channel's permanent refusal marks. Channels register their
senders later (add_channel). A process that delivers nothing (web, scheduler) tells the
workers what it queued."""

from __future__ import annotations

import logging
from collections.abc import Callable

from bot.app.base import Ground
from bot.app.costs import allowance
from bot.app.stores import Stores
from bot.approvals.outcomes import card_outcomes
from bot.channel import ChannelSender, PermanentSendError
from bot.contracts.clock import Clock
from bot.contracts.envelopes import OutboundMessage, PromptKind
from bot.gateway.delivery import OnPermanent, OutboxDeliverer
from bot.gateway.health import ChannelHealth
from bot.gateway.notify import Notifier, RoutableSenders
from bot.gateway.outbound import Outbound
from bot.gateway.outbox import OutboxStore
from bot.gateway.prompt_edits import Outcomes, PromptEdits
from bot.meter.gate import Meter
from bot.people.access import AccessControl
from bot.people.identity import IdentityStore
from triggers.budget import TellOwner

log = logging.getLogger(__name__)


def build_outbound(base: Ground, stores: Stores) -> Outbound:
    settings, db, clock = base.settings, base.db, base.clock
    plane, lines = base.plane, base.persona.lines
    senders: dict[str, ChannelSender] = {}
    outbox = OutboxStore(db)
    policy = settings.delivery_policy()
    health = ChannelHealth(policy.channel_probe_seconds)
    outcomes = {PromptKind.APPROVAL: card_outcomes(stores.approvals, lines),
                PromptKind.PAIRING: pairing_outcomes(stores.access, clock)}
    return Outbound(
        db=db, clock=clock, users=stores.users, outbox=outbox,
        deliverer=OutboxDeliverer(outbox, senders, clock, policy,
                                  on_permanent=mark_unwritable(stores.identities, clock),
                                  health=health, meter=build_meter(base, stores)),
        notifier=Notifier(db, stores.users, stores.identities, outbox, clock,
                          RoutableSenders(senders), health),
        senders=senders,
        prompt_edits=PromptEdits(db, outbox, clock, outcomes, can_edit=can_edit_cards(senders)),
        channel_down_line=lambda: lines.channel_down,  # in each owner's language
        # A process that delivers nothing tells the workers what it queued.
        wake_elsewhere=plane.relay.wake_elsewhere() if plane.relay and not base.roles.worker
        else None)


def build_meter(base: Ground, stores: Stores) -> Meter:
    """The one gate every message passes before its channel sends it (bot.meter)."""
    return Meter(base.spending, allowance(base.settings), stores.users, base.clock,
                 door_reply_minutes=base.settings.door_reply_minutes())


def pairing_outcomes(access: AccessControl, clock: Clock) -> Outcomes:
    async def outcomes(codes: list[str]) -> dict[str, str]:
        return await access.pairing_outcomes(codes, clock.now())

    return outcomes


def can_edit_cards(senders: dict[str, ChannelSender]) -> Callable[[str], bool]:
    def can_edit(channel: str) -> bool:
        sender = senders.get(channel)
        return sender is not None and sender.traits.edit

    return can_edit


def tell_owner(outbound: Outbound) -> TellOwner:
    async def tell(text: str, dedupe_key: str) -> bool:
        return await outbound.notify_owner(text, dedupe_key=dedupe_key)

    return tell


def mark_unwritable(identities: IdentityStore, clock: Clock) -> OnPermanent:
    async def mark(message: OutboundMessage, err: PermanentSendError) -> None:
        if err.opted_out:
            await identities.set_opted_out(message.channel, message.address, True,
                                           at=clock.now())
        else:
            await identities.set_unreachable(message.channel, message.address, True,
                                             at=clock.now())
        log.warning("%s %s can no longer be written to: %s", message.channel,
                    message.address, err)

    return mark
