"""Approval prompts that were decided, expired or interrupted: the message that showed them
is edited to say so and loses its buttons (on channels that can edit a sent message).

The edit goes through the outbox like every message (ordered per chat, retried, once), keyed
by the prompt message's outbox row.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence

from bot.contracts.clock import Clock
from bot.contracts.envelopes import ApprovalPrompt, PromptKind, prompts_of
from bot.db import Database
from bot.db.turn_reads import Holding, may_hold
from bot.gateway.outbox import Lane, OutboxStore
from persona.speaking import listener_language, speaking_to

log = logging.getLogger(__name__)

# prompt ids -> what became of each ("waiting" while it still waits), one lookup per kind
Outcomes = Callable[[list[str]], Awaitable[dict[str, str]]]

_UNSETTLED = ("user_id = $1 AND prompts_settled = 0 AND status = 'sent'"
              " AND channel_message_id IS NOT NULL AND payload LIKE '%\"prompts\"%'")
# Prompt messages not settled yet (sent, or still on their way at the start of a turn: one
# may be sent and answered while the turn runs), asked with the person's row: after the turn
# of someone with none there is nothing to settle (a prompt this turn sends still waits for
# its answer), and no statement is made (bot.db.turn_reads).
HOLDING = Holding("prompts", "EXISTS (SELECT 1 FROM outbox WHERE user_id = $1"
                  " AND prompts_settled = 0 AND status IN ('pending', 'sending', 'sent')"
                  " AND payload LIKE '%\"prompts\"%')")


class PromptEdits:
    def __init__(self, db: Database, outbox: OutboxStore, clock: Clock,
                 outcomes: Mapping[PromptKind, Outcomes],
                 can_edit: Callable[[str], bool]) -> None:
        self.db = db
        self.outbox = outbox
        self.clock = clock
        self.outcomes = outcomes  # approvals' outcomes, pairing requests' outcomes
        self.can_edit = can_edit
        # The language each person reads ("Done", "Erledigt"): settled in the background
        # (the sweeper), no turn has said whom Valet is speaking to.
        self.language_of: Callable[[str], Awaitable[str | None]] | None = None

    async def settle(self, user_id: str) -> int:
        """Queue an edit for each of the user's sent prompt messages whose requests are all
        settled; returns how many."""
        if not may_hold(user_id, HOLDING.name):
            return 0
        rows = await self.db.fetch(
            "SELECT id, channel, address, text, channel_message_id, payload FROM outbox"
            f" WHERE {_UNSETTLED}", user_id)
        queued = 0
        language = listener_language()
        if rows and language is None and self.language_of is not None:
            language = await self.language_of(user_id)
        for row in rows:
            prompts = prompts_of(json.loads(row["payload"]))
            if not self.can_edit(row["channel"]) or not prompts:
                await self._mark(row["id"])
                continue
            with speaking_to(language):
                states = await self._states(prompts)
            if any(states.get(p.id, "waiting") == "waiting" for p in prompts):
                continue  # one still waits: its buttons stay
            said = "\n".join(f"{states[p.id]}: {p.summary}" for p in prompts)
            # One edit per message and outcome: a card corrected later (its message to
            # someone did not go after all) is edited again, once.
            digest = hashlib.sha256(said.encode()).hexdigest()[:12]
            async with self.db.transaction() as tx:
                await self.outbox.enqueue(
                    tx, dedupe_key=f"prompt-outcome:{row['id']}:{digest}", user_id=user_id,
                    channel=row["channel"], address=row["address"],
                    text="\n\n".join(t for t in (row["text"], said) if t),
                    at=self.clock.now(), lane=Lane.URGENT,
                    payload={"kind": f"edit:{row['channel_message_id']}"})
                await tx.execute("UPDATE outbox SET prompts_settled = 1 WHERE id = $1",
                                 row["id"])
            queued += 1
        return queued

    async def reopen(self, user_id: str, prompt_ids: Sequence[str]) -> None:
        """These requests' outcome changed after their card was settled: settle it again."""
        for prompt_id in prompt_ids:
            await self.db.execute(
                "UPDATE outbox SET prompts_settled = 0 WHERE user_id = $1 AND prompts_settled = 1"
                " AND status = 'sent' AND payload LIKE $2", user_id, f'%"{prompt_id}"%')

    async def _states(self, prompts: Sequence[ApprovalPrompt]) -> dict[str, str]:
        states: dict[str, str] = {}
        for kind, lookup in self.outcomes.items():
            ids = [p.id for p in prompts if p.kind is kind]
            if ids:
                states.update(await lookup(ids))
        return states

    async def _mark(self, row_id: int) -> None:
        await self.db.execute("UPDATE outbox SET prompts_settled = 1 WHERE id = $1", row_id)
