"""Approvals as the App builds them: the flow (gate, open, execute once), the turn's step that
reads answers, and the sweeper (expiries, lapsed leases, effects followed)."""

from __future__ import annotations

from dataclasses import dataclass

from agents.email.delivery import MailDelivery
from agents.email.effects import MailEffects
from bot.app.base import Base
from bot.app.outbound import can_edit_cards
from bot.app.stores import Stores
from bot.approvals.decide import ApprovalStep
from bot.approvals.effects import EffectRecords
from bot.approvals.elsewhere import OtherPrompts
from bot.approvals.flow import ApprovalFlow
from bot.approvals.sweeper import ApprovalSweeper
from bot.contracts.answer_words import answer_words
from bot.gateway.others import MessageEffects
from bot.gateway.outbound import Outbound
from persona.lines import Lines


@dataclass(frozen=True)
class Approvals:
    flow: ApprovalFlow
    step: ApprovalStep  # the turn's step: a reply or a button decides pending requests
    sweeper: ApprovalSweeper


def build_approvals(base: Base, stores: Stores, outbound: Outbound,
                    mail: MailDelivery) -> Approvals:
    settings, lines, cfg = base.settings, base.persona.lines, base.loop_config
    flow = ApprovalFlow(
        stores.approvals, base.agents.tools, base.clock, base.llm, lines=lines,
        tool_timeout=cfg.tool_execution_timeout, agent_timeout=cfg.agent_tool_execution_timeout,
        effects=effect_records(outbound, mail, lines))
    return Approvals(
        flow=flow,
        step=ApprovalStep(flow, stores.users, lines=lines,
                          can_edit=can_edit_cards(outbound.senders),
                          words=answer_words(base.persona.languages),
                          elsewhere=OtherPrompts(stores.pool, stores.access, base.clock,
                                                 lines=lines)),
        sweeper=ApprovalSweeper(flow, outbound, stores.users,
                                every=settings.approvals.sweep_seconds))


def effect_records(outbound: Outbound, mail: MailDelivery, lines: Lines
                   ) -> tuple[EffectRecords, ...]:
    """Where approved actions' effects settle after they return (bot.approvals.effects): a tool
    names the records it uses by their key (`@tool(effect=...)`)."""
    return (MessageEffects(outbound.outbox, lines), MailEffects(mail.outbox, lines))
