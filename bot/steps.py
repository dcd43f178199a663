"""Small turn steps that only add context lines for the LLM (what waits, the plan)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from bot.turn import Continue, StepResult, TurnContext

NoteFor = Callable[[str], Awaitable[str | None]]


class ContextStep:
    """Adds one system-context line for this turn when `note_for(user_id)` has one."""

    def __init__(self, name: str, note_for: NoteFor) -> None:
        self.name = name
        self.note_for = note_for

    async def before(self, ctx: TurnContext) -> StepResult:
        note = await self.note_for(ctx.user.id)
        return Continue(context=(note,) if note else ())
