"""The stores every other part reads and writes: people, access, the conversation, waiting
tasks, the turn journal, approvals, the agents' tables, credentials, summaries, traces, usage."""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import timedelta

from agents.stores import AgentStores
from agents.tools.plan_store import HOLDING as PLAN
from bot.app.base import Ground
from bot.app.owner import access_with_claims
from bot.approvals.store import HOLDING as APPROVALS
from bot.approvals.store import ApprovalStore
from bot.config import Settings
from bot.credentials import CredentialStore
from bot.db.turn_reads import Holding
from bot.gateway.inbox import InboxStore
from bot.gateway.prompt_edits import HOLDING as PROMPTS
from bot.loop.journal import TurnJournal
from bot.memory.facts import HOLDING as FACTS
from bot.memory.history import HistoryStore
from bot.memory.summaries import HOLDING as SUMMARY
from bot.memory.summaries import SummaryStore
from bot.people.access import AccessControl
from bot.people.identity import IdentityStore
from bot.people.users import UserStore
from bot.tasks.pool import HOLDING as PAUSED_TASKS
from bot.tasks.pool import AgentPool
from bot.turn.trace_store import TraceStore
from bot.turn.usage import UsageStore


@dataclass(frozen=True)
class Stores:
    users: UserStore
    identities: IdentityStore
    access: AccessControl  # with the owner's claim code
    history: HistoryStore
    pool: AgentPool  # tasks waiting for the person's answer
    journal: TurnJournal
    approvals: ApprovalStore
    agents: AgentStores  # notes, reminders, plans, contacts
    credentials: CredentialStore  # connected services' secrets, encrypted at rest
    summaries: SummaryStore  # old messages folded into a running summary
    traces: TraceStore  # what each turn did: /debug, `valet turns`
    usage: UsageStore
    inbox: InboxStore  # every inbound message, before it is acknowledged


def holdings(settings: Settings) -> tuple[Holding, ...]:
    """What a turn asks with the person's row: which of their stores hold anything it would
    read (bot.db.turn_reads); a part with nothing for them is not read."""
    memory = (FACTS,) if settings.memory.enabled else ()
    return (APPROVALS, PAUSED_TASKS, PLAN, *memory, PROMPTS, SUMMARY)


def build_stores(base: Ground) -> Stores:
    settings, db, clock = base.settings, base.db, base.clock
    users = UserStore(db, holdings=holdings(settings), clock=clock)
    identities = IdentityStore(db, users)
    return Stores(
        users=users, identities=identities,
        access=access_with_claims(settings, db, identities, base.persona.lines),
        history=HistoryStore(db, load_limit=settings.gateway.history_messages),
        pool=AgentPool(db, clock, ttl=timedelta(minutes=settings.agents.pool_ttl_minutes),
                       max_per_user=settings.agents.pool_max_per_user),
        journal=TurnJournal(db, clock),
        approvals=ApprovalStore(
            db, timeout=timedelta(minutes=settings.approvals.timeout_minutes),
            lease=timedelta(seconds=settings.approvals.lease_seconds)),
        agents=AgentStores(db), credentials=CredentialStore.tolerant(db, os.environ),
        summaries=SummaryStore(db), traces=TraceStore(db), usage=UsageStore(db),
        inbox=InboxStore(db))
