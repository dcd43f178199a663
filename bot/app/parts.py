"""The parts the composition root (bot.app.root) builds with a little wiring of their own: the
outbound side, mail, approval effects, task budgets, and the small adapters between them."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta

from agents.email.delivery import DeliveryPolicy, MailDelivery, stored_accounts
from agents.email.effects import MailEffects
from agents.email.outbox import MailOutbox
from agents.tools.plan_store import HOLDING as PLAN
from bot.app.owner import CONSOLE_ADDRESS, OWNER_ID, ensure_owner, record_owner  # noqa: F401 (re-exported)
from bot.approvals.effects import EffectRecords
from bot.approvals.store import HOLDING as APPROVALS
from bot.channel import PermanentSendError
from bot.config import Settings
from bot.contracts.clock import Clock
from bot.contracts.envelopes import (
    Delivery,
    Notification,
    OutboundMessage,
    PromptKind,
    TriggerMessage,
)
from bot.contracts.turn import TurnContext
from bot.credentials import CredentialStore
from bot.db import Database
from bot.db.turn_reads import Holding
from bot.gateway.delivery import ChannelSender, OnPermanent, OutboxDeliverer
from bot.gateway.gateway import Gateway
from bot.gateway.health import ChannelHealth
from bot.gateway.notify import Notifier, RoutableSenders
from bot.gateway.others import MessageEffects
from bot.gateway.outbound import Outbound
from bot.gateway.outbox import OutboxStore
from bot.gateway.prompt_edits import HOLDING as PROMPTS
from bot.gateway.prompt_edits import Outcomes, PromptEdits
from bot.memory.facts import HOLDING as FACTS
from bot.memory.summaries import HOLDING as SUMMARY
from bot.people.access import AccessControl
from bot.people.identity import IdentityStore
from bot.people.users import UserStore
from bot.tasks.pool import HOLDING as PAUSED_TASKS
from persona.lines import ConversationLines, Lines, MailLines
from triggers.budget import Budget, Budgets, TellOwner
from triggers.service import TaskService

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TriggerDoor:
    """What a triggered run needs of the message path: the person's queue (the gateway's
    entry by user) and notifications (the outbound side)."""

    gateway: Gateway
    outbound: Outbound

    async def submit(self, msg: TriggerMessage) -> bool:
        return await self.gateway.submit(msg)

    async def notify(self, note: Notification) -> Delivery:
        return await self.outbound.notify(note)


def holdings(settings: Settings) -> tuple[Holding, ...]:
    """What a turn asks with the person's row: which of their stores hold anything it would
    read (bot.db.turn_reads); a part with nothing for them is not read."""
    memory = (FACTS,) if settings.memory.enabled else ()
    return (APPROVALS, PAUSED_TASKS, PLAN, *memory, PROMPTS, SUMMARY)


def pairing_outcomes(access: AccessControl, clock: Clock) -> Outcomes:
    async def outcomes(codes: list[str]) -> dict[str, str]:
        return await access.pairing_outcomes(codes, clock.now())

    return outcomes


def build_outbound(settings: Settings, db: Database, clock: Clock, users: UserStore,
                    identities: IdentityStore, outcomes: Mapping[PromptKind, Outcomes],
                    lines: ConversationLines,
                    wake_elsewhere: Callable[[str | None, str | None], None] | None = None
                    ) -> Outbound:
    """The outbox and its deliverer, notifications, prompt edits. Channels register their
    senders later (App.add_channel) in the map it delivers through."""
    senders: dict[str, ChannelSender] = {}
    outbox = OutboxStore(db)
    policy = settings.delivery_policy()
    health = ChannelHealth(policy.channel_probe_seconds)
    return Outbound(
        db=db, clock=clock, users=users, outbox=outbox,
        deliverer=OutboxDeliverer(outbox, senders, clock, policy,
                                  on_permanent=mark_unwritable(identities, clock),
                                  health=health),
        notifier=Notifier(db, users, identities, outbox, clock, RoutableSenders(senders),
                          health),
        senders=senders,
        prompt_edits=PromptEdits(db, outbox, clock, outcomes, can_edit=can_edit_cards(senders)),
        channel_down_line=lines.channel_down, wake_elsewhere=wake_elsewhere)


def effect_records(outbound: Outbound, mail: MailDelivery, lines: Lines
                   ) -> tuple[EffectRecords, ...]:
    """Where approved actions' effects settle after they return (bot.approvals.effects): a tool
    names the records it uses by their key (`@tool(effect=...)`)."""
    return (MessageEffects(outbound.outbox, lines), MailEffects(mail.outbox, lines))


def build_mail(db: Database, clock: Clock, credentials: CredentialStore,
                outbound: Outbound, lines: MailLines) -> MailDelivery:
    """Approved mail is stored (keyed by its approval id) and sent once; the deliverer
    retries what the server did not take and tells the person the outcome."""
    policy = DeliveryPolicy()
    return MailDelivery(MailOutbox(db, lease=policy.lease), clock, stored_accounts(credentials),
                        lines=lines, policy=policy, notify=outbound.notify)


def can_edit_cards(senders: dict[str, ChannelSender]) -> Callable[[str], bool]:
    def can_edit(channel: str) -> bool:
        features = getattr(senders.get(channel), "features", None)
        return bool(features is not None and features.edit)

    return can_edit


def task_budgets(settings: Settings) -> Budgets:
    t = settings.triggers
    return Budgets(
        others=Budget(t.max_active_tasks, timedelta(minutes=t.min_llm_interval_minutes)),
        owner=Budget(t.owner_max_active_tasks,
                     timedelta(minutes=t.owner_min_llm_interval_minutes)))


def tell_owner(outbound: Outbound) -> TellOwner:
    async def tell(text: str, dedupe_key: str) -> bool:
        return await outbound.notify_owner(text, dedupe_key=dedupe_key)

    return tell


def task_listing(tasks: TaskService) -> Callable[[TurnContext, list[str]], Awaitable[str]]:
    async def listing(ctx: TurnContext, args: list[str]) -> str:
        return await tasks.listing(ctx.user.id)

    return listing


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
