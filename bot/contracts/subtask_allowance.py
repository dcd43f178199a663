"""What one turn may spend on sub-tasks (the `delegate` tool, bot.loop.subtasks): how many it may
start (`loop.subtask_max_per_turn`), how many run at once (`loop.subtask_concurrency`), and
whether its next LLM request may be taken from the person's rate limit. One per turn, carried
by the turn's tool context (bot.loop.subtask_llm makes it), never shared between turns or people.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

# The result_status of a delegate call the allowance stopped: the reply then says what was
# not done (bot.loop.subtasks.short_changed), whatever the model makes of its tool error.
NOT_STARTED = "SUBTASK_LIMIT"
RATE_LIMITED = "SUBTASK_RATE_LIMITED"


@dataclass
class SubtaskAllowance:
    max_subtasks: int = 3
    concurrency: int = 2
    # Takes one LLM request from the person's rate limit; False when it is reached. None: no
    # rate limit (the owner).
    take_request: Callable[[], bool] | None = None
    per_minute: int = 0  # the rate limit, for the words the model reads
    started: int = 0
    _slots: asyncio.Semaphore | None = field(default=None, repr=False)

    def start(self) -> bool:
        """Count one more sub-task, if the turn may start it."""
        if self.started >= self.max_subtasks:
            return False
        self.started += 1
        return True

    @property
    def slots(self) -> asyncio.Semaphore:
        """Held while a sub-task runs: at most `concurrency` at once."""
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.concurrency)
        return self._slots

    def request(self) -> bool:
        return self.take_request is None or self.take_request()
