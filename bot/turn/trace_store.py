"""The turn traces a deployment keeps: the last `KEPT_PER_PERSON` turns of each person, as
`bot.loop.traces.TurnTrace` (JSON), written once when the turn is stored. `turn_trace` builds one
from what the turn's steps and loop returned."""

from __future__ import annotations

from datetime import datetime

from bot.contracts.turn import ComposedTurn, StepResult, TurnContext
from bot.db import Database, Queries
from bot.loop.traces import KEPT_TEXT, Entry, TurnTrace, render, shorten
from bot.loop.types import ReactLoopResult, Spent
from bot.turn.commands import Command
from bot.turn.compose import LLMFailure, Waits
from persona.lines import CommandLines, fill

KEPT_PER_PERSON = 50


def turn_trace(ctx: TurnContext, before: StepResult, run: ReactLoopResult | LLMFailure | None,
               waits: Waits, turn: ComposedTurn, at: datetime) -> TurnTrace:
    entries: list[Entry] = [{"kind": "joined", "name": late.name,
                             "result": shorten(late.content, KEPT_TEXT)}
                            for late in before.joined]
    looped = run if isinstance(run, ReactLoopResult) else None
    # A failed turn says what it had spent too: its real time and tokens, its trace.
    spent = run.spent if isinstance(run, LLMFailure) and run.spent is not None else Spent(
        looped.duration_ms, looped.token_usage.input_tokens, looped.token_usage.output_tokens,
        looped.mode, looped.trace) if looped is not None else None
    if spent is not None:
        entries += spent.trace
    entries += [{"kind": "approval", "summary": p.summary} for p in waits.prompts]
    return TurnTrace(
        turn_id=ctx.turn_id, user_id=ctx.user.id, channel=ctx.msg.channel, at=at.isoformat(),
        said=shorten(ctx.msg.text, KEPT_TEXT), stop=turn.stop.value,
        mode=spent.mode if spent else "", duration_ms=spent.duration_ms if spent else 0,
        input_tokens=spent.input_tokens if spent else 0,
        output_tokens=spent.output_tokens if spent else 0, entries=entries,
        error=run.error if isinstance(run, LLMFailure) else "")


class TraceStore:
    def __init__(self, db: Database, kept_per_person: int = KEPT_PER_PERSON) -> None:
        self.db = db
        self.kept = kept_per_person

    async def write(self, trace: TurnTrace, at: datetime, q: Queries | None = None) -> None:
        """Keep this turn's trace (a turn is traced once) and forget the person's oldest.
        `q`: the transaction or batch that stores the turn (bot.db.batch: its statements
        may not see each other's rows, so the newest others are counted without this one)."""
        if q is None:
            async with self.db.transaction() as tx:
                await self.write(trace, at, tx)
            return
        await q.execute(
            "INSERT INTO turn_traces (turn_id, user_id, created_at, stop, body)"
            " VALUES ($1, $2, $3, $4, $5) ON CONFLICT (turn_id) DO NOTHING",
            trace.turn_id, trace.user_id, at, trace.stop, trace.to_json())
        await q.execute(
            "DELETE FROM turn_traces WHERE user_id = $1 AND turn_id <> $2"
            " AND turn_id NOT IN (SELECT turn_id FROM turn_traces WHERE user_id = $1"
            " AND turn_id <> $2 ORDER BY seq DESC LIMIT $3)",
            trace.user_id, trace.turn_id, self.kept - 1)

    async def get(self, turn_id: str) -> TurnTrace | None:
        body = await self.db.fetchval("SELECT body FROM turn_traces WHERE turn_id = $1",
                                      turn_id)
        return TurnTrace.from_json(body) if body is not None else None

    async def last(self, user_id: str) -> TurnTrace | None:
        found = await self.recent(user_id, 1)
        return found[0] if found else None

    async def recent(self, user_id: str | None = None, limit: int = 20) -> list[TurnTrace]:
        """The newest first; everyone's when `user_id` is None."""
        if user_id is None:
            rows = await self.db.fetch("SELECT body FROM turn_traces ORDER BY seq DESC"
                                       " LIMIT $1", limit)
        else:
            rows = await self.db.fetch("SELECT body FROM turn_traces WHERE user_id = $1"
                                       " ORDER BY seq DESC LIMIT $2",
                                       user_id, limit)
        return [TurnTrace.from_json(r["body"]) for r in rows]


def debug_command(traces: TraceStore, lines: CommandLines) -> Command:
    """`/debug`: the owner's last turn, step by step; `/debug USER` someone else's, `/debug
    TURN_ID` one turn. Anyone else gets the answer to an unknown command."""

    async def debug(ctx: TurnContext, args: list[str]) -> str:
        wanted = args[0] if args else ctx.user.id
        trace = await traces.get(wanted) if args else None
        trace = trace or await traces.last(wanted)
        if trace is None:
            return fill(lines.debug_nothing_traced_for, who=wanted) if args \
                else lines.debug_nothing_traced
        return render(trace)

    return Command("/debug", lines.about_debug, debug, owner_only=True, hidden=True)
