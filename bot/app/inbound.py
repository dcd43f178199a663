"""The inbound gateway as the App builds it: the inbox, access, one turn at a time per person
(the orchestrator's), button answers at once, messages that join a running turn, and with
Redis the relay to the work stream."""

from __future__ import annotations

from bot.app.approvals import Approvals
from bot.app.base import Base
from bot.app.budget import pairing_notices
from bot.app.stores import Stores
from bot.app.turn import Turn
from bot.gateway.budget import BudgetGate
from bot.gateway.gateway import Gateway, GatewayDeps
from bot.gateway.outbound import Outbound
from bot.llm.transcribe import Transcriber
from bot.turn.media import MediaReader
from triggers.service import TaskService


def build_gateway(base: Base, stores: Stores, outbound: Outbound, turn: Turn,
                  approvals: Approvals, tasks: TaskService, transcriber: Transcriber | None,
                  budget: BudgetGate) -> Gateway:
    settings, lines, plane = base.settings, base.persona.lines, base.plane
    return Gateway(GatewayDeps(
        db=base.db, clock=base.clock, users=stores.users, identities=stores.identities,
        access=stores.access, inbox=stores.inbox, outbound=outbound,
        history=stores.history, handle_message=turn.orchestrator.handle_message,
        locks=plane.locks, failure_line=lines.llm_unavailable,
        voice_line=lines.voice_unreadable, unreadable_line=lines.message_unreadable,
        # voice notes are heard when their turn runs
        media=MediaReader(transcriber.transcribe if transcriber else None),
        max_attempts=settings.gateway.turn_attempts,
        retry_seconds=settings.gateway.turn_retry_seconds,
        answer_button=approvals.step.answer_button, silenced=tasks.silenced,
        mid_turn=settings.gateway.mid_turn, answers_approval=approvals.step.answers_pending,
        relay=plane.relay, drained=plane.stream.drained if plane.stream else None,
        pairing_notices=pairing_notices(settings, base.db, base.clock, outbound, lines),
        budget=budget, person_first=base.models.gate))
