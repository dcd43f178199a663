"""The inbound gateway as every process role builds it: the inbox, access, one turn at a time
per person, button answers at once, messages that join a running turn, and with Redis the
relay to the work stream. A process that runs turns (bot.app.root.App) hands it their parts
(`TurnParts`); a web process (bot.app.front.Front) has none: its rows go to the work stream,
and a turn asked of it is a bug (`no_turns` raises)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from bot.app.base import Ground
from bot.app.budget import pairing_notices
from bot.app.stores import Stores
from bot.contracts.envelopes import Reply
from bot.gateway.budget import BudgetGate
from bot.gateway.deps import ButtonAnswer, GatewayDeps, HandleMessage, TurnWatcher
from bot.gateway.gateway import Gateway
from bot.gateway.outbound import Outbound
from bot.llm.transcribe import Transcriber
from bot.turn.media import MediaReader


@dataclass(frozen=True)
class TurnParts:
    """What runs a turn in this process, as the gateway calls it."""

    handle_message: HandleMessage  # the orchestrator's
    answers_approval: Callable[[str, str], Awaitable[bool]]  # a message answers a card
    silenced: Callable[[str], Awaitable[bool]]  # a trigger run's reply that stays unsent
    budget: BudgetGate  # a person at today's allowance: their messages wait
    transcriber: Transcriber | None  # voice notes, heard when their turn runs
    person_first: TurnWatcher | None  # background LLM work gives way to a person's turn


async def no_turns(*args: Any, **kwargs: Any) -> Reply:
    raise RuntimeError("a web process runs no turn: its rows go to the work stream")


def build_gateway(base: Ground, stores: Stores, outbound: Outbound, answer_button: ButtonAnswer,
                  turns: TurnParts | None) -> Gateway:
    settings, lines, plane = base.settings, base.persona.lines, base.plane
    transcriber = turns.transcriber if turns else None
    return Gateway(GatewayDeps(
        db=base.db, clock=base.clock, users=stores.users, identities=stores.identities,
        access=stores.access, inbox=stores.inbox, outbound=outbound,
        history=stores.history, handle_message=turns.handle_message if turns else no_turns,
        locks=plane.locks, failure_line=lambda: lines.llm_unavailable,
        voice_line=lambda: lines.voice_unreadable,
        unreadable_line=lambda: lines.message_unreadable,
        # voice notes are heard when their turn runs
        media=MediaReader(transcriber.transcribe if transcriber else None),
        max_attempts=settings.gateway.turn_attempts,
        retry_seconds=settings.gateway.turn_retry_seconds,
        answer_button=answer_button, silenced=turns.silenced if turns else None,
        mid_turn=settings.gateway.mid_turn,
        answers_approval=turns.answers_approval if turns else None,
        relay=plane.relay, drained=plane.stream.drained if plane.stream else None,
        pairing_notices=pairing_notices(settings, base.db, base.clock, outbound, lines),
        budget=turns.budget if turns else None,
        person_first=turns.person_first if turns else None))
