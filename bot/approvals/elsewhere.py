"""The other kinds of prompts that may wait for a person's answer beside their approvals: a
task's question (bot.tasks) and, for the owner, strangers waiting to be let in (pairing). A
bare "yes" could be meant for any of them, so the approvals step names each, with how to
answer it, rather than guess (bot.approvals.replies)."""

from __future__ import annotations

from typing import Protocol

from bot.contracts.clock import Clock
from bot.contracts.pause import PausedTask
from bot.contracts.people import User
from bot.people.access import AccessControl, one_line, quoted
from persona.lines import Lines, fill


class WaitingTasks(Protocol):
    """The tasks waiting for a person's answer (bot.tasks.pool.AgentPool)."""

    async def waiting(self, user_id: str) -> list[PausedTask]: ...


class OtherPrompts:
    def __init__(self, pool: WaitingTasks | None, access: AccessControl | None, clock: Clock, *,
                 lines: Lines) -> None:
        self.pool = pool
        self.access = access
        self.clock = clock
        self.lines = lines

    async def __call__(self, user: User) -> list[str]:
        """Each prompt of another kind waiting for `user`, named with how to answer it."""
        lines = self.lines
        named: list[str] = []
        if self.pool is not None:
            named += [fill(lines.approval_which_task, question=task.question)
                      for task in await self.pool.waiting(user.id)]
        if self.access is not None and user.is_owner:
            for request in await self.access.list_pairings(self.clock.now()):
                who = quoted(request.display_name) if request.display_name \
                    else one_line(request.address)
                named.append(fill(lines.approval_which_pairing, who=who, code=request.code,
                                  word=lines.pairing_approve_word))
        return named
