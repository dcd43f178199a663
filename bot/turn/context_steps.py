"""Small turn steps that only add context lines for the LLM (what waits, the plan)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from bot.contracts.turn import Continue, StepResult, TurnContext
from bot.people.users import UserStore

NoteFor = Callable[[str], Awaitable[str | None]]


class ContextStep:
    """Adds one system-context line for this turn when `note_for(user_id)` has one."""

    def __init__(self, name: str, note_for: NoteFor, *, reads: str | None = None) -> None:
        self.name = name
        self.note_for = note_for
        self.reads = reads

    async def before(self, ctx: TurnContext) -> StepResult:
        note = await self.note_for(ctx.user.id)
        return Continue(context=(note,) if note else ())


class AskTimezoneOnce:
    """Step: a new person's timezone was guessed from a phone number that could be in several
    zones. The first turn asks them once which is theirs (their answer sets it through
    set_my_timezone); after that the guess stands until they say otherwise."""

    name = "timezone question"
    reads = None  # the person's own row, read with the turn

    def __init__(self, users: UserStore) -> None:
        self.users = users

    async def before(self, ctx: TurnContext) -> StepResult:
        candidates = ctx.user.timezone_candidates
        if not candidates or ctx.msg.from_trigger or ctx.msg.button is not None:
            return Continue()
        if not await self.users.mark_timezone_asked(ctx.user.id, ctx.tool_ctx.clock.now()):
            return Continue()
        return Continue(context=(
            f"The user's timezone ({ctx.user.timezone}) is only a guess from their phone "
            f"number, which could be in any of: {', '.join(candidates)}. After answering "
            "them, ask once, briefly, which city or time zone they are in; when they say, "
            "call set_my_timezone.",))
