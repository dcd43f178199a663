"""Approved actions whose effect settles after the action returned: the approval follows it.

An approved `message_someone` queues one outbox row keyed by the approval id, and an approved
mail one `mail_outbox` row; the action returns once the row is stored, and the row is sent
later (at once, after retries, after a restart). Such an approval is recorded `executed` with
`effect_pending`, and whoever keeps the record (`EffectRecords`, named by the tool's
`effect` key) is asked what became of it, by the sweeper and at the person's next turn:

    still on its way        nothing changes
    sent                    it stays executed (done)
    failed                  executed -> failed, and the person is told why (unless the record's
                            owner told them already: the mail deliverer does)
    unknown                 executed -> unknown (a send cut off by a dead process): the person
                            is told what to check and offered the same action again, as a new
                            approval (a card); never re-sent on its own

Each change is a compare-and-set in the store, so the person hears of it once however many
processes look; the conversation hears it at their next turn as the call's corrected result.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Protocol

from bot.approvals.store import ApprovalStore
from bot.contracts.approvals import ApprovalRequest, ApprovalStatus, ExecutionStatus
from persona.speaking import speaking_to

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Effect:
    """What became of an approved action's durable effect."""

    status: ExecutionStatus  # EXECUTED, FAILED or UNKNOWN
    reason: str = ""  # what went wrong, for the conversation and the record
    told: bool = False  # the record's owner has told the person already
    line: str = ""  # what the person is told, in the record owner's words ("": the generic)


class EffectRecords(Protocol):
    """Where an approved action's effect waits, keyed by its approval id. A tool whose
    approved effect waits here names the records' `key` (`@tool(effect=...)`)."""

    key: str

    async def effect(self, approval: ApprovalRequest) -> Effect | None:
        """None while it is still on its way."""
        ...


@dataclass(frozen=True)
class Followed:
    """An approval whose effect settled badly: what the person is to be told."""

    approval: ApprovalRequest  # as it is now (failed or unknown)
    effect: Effect


def corrected_result(effect: Effect) -> str:
    """What the conversation hears now, in place of the earlier "on its way"."""
    if effect.status is ExecutionStatus.UNKNOWN:
        return (f"Outcome unknown: {effect.reason}. It may or may not have happened; the user "
                "was told to check and offered to try again (a new approval). Do not say it "
                "was done.")
    return f"Failed after all: {effect.reason}. It did not happen; the user was told."


class EffectWatch:
    def __init__(self, store: ApprovalStore, effect_of: Callable[[str], str | None],
                 records: Sequence[EffectRecords]) -> None:
        self.store = store
        self.effect_of = effect_of  # a tool's name -> its effect's key (Tool.effect)
        self.by_key = {r.key: r for r in records}

    def records(self, tool_name: str) -> EffectRecords | None:
        """Where the effect of an approved call of this tool settles; None: when it returns."""
        key = self.effect_of(tool_name)
        return self.by_key.get(key) if key is not None else None

    def follows(self, tool_name: str) -> bool:
        return self.records(tool_name) is not None

    async def follow(self, user_id: str | None = None,
                     language_of: Callable[[str], Awaitable[str | None]] | None = None
                     ) -> list[Followed]:
        """One look at every pending effect (one user's, or everyone's); returns the ones that
        settled badly now (each once, whoever else is looking). `language_of`: the language
        each request's person reads, when no turn has set it (the sweeper): a record's line
        is written for them."""
        bad = []
        for approval in await self.store.effects_pending(user_id):
            records = self.records(approval.tool_name)
            language = await language_of(approval.user_id) if language_of is not None else None
            try:
                with speaking_to(language) if language_of is not None else nullcontext():
                    effect = await records.effect(approval) if records is not None else \
                        Effect(ExecutionStatus.EXECUTED)
            except Exception:  # a record that cannot be read now is read at the next look
                log.warning("reading the effect of approval %s failed", approval.id,
                            exc_info=True)
                continue
            if effect is None:
                continue
            status = effect.status.record
            result = None if status is ApprovalStatus.EXECUTED else corrected_result(effect)
            if await self.store.effect_settled(approval.id, status, result) and \
                    status is not ApprovalStatus.EXECUTED:
                log.warning("approved action %s (%s) did not go: %s", approval.id,
                            approval.tool_name, effect.reason)
                now = await self.store.get(approval.id)
                bad.append(Followed(now or approval, effect))
        return bad
