"""The mid-turn queue, the gateway's side: while a person's turn runs, a message of theirs that
can join it (not a command, not an answer to an approval) is handed to that turn instead of
waiting for a turn of its own (`gateway.mid_turn: steer`; `queue` keeps the old way).

The message is in the inbox first, as every message is; the running turn's `TurnMailbox`
holds its row id and text. The turn takes what is there before each LLM call (bot.loop.steering),
records it in its journal, and has the rows closed as `steered` (with the turn's id) here. A
message the turn never took (it arrived during the last LLM call) stays `received` and gets a
turn of its own after this one, as before. With several processes the message reaches the
worker running the turn as a signal (bot.work.control, `steer`; RunningTurns.steer_heard), and it
joins the turn only if it is newer than the turn's own row.
"""

from __future__ import annotations

from bot.contracts.clock import Clock
from bot.contracts.steering import Steered
from bot.gateway.inbox import InboxStore


class TurnMailbox:
    """One running turn's messages from its person (the loop's `Steering`)."""

    def __init__(self, inbox: InboxStore, clock: Clock, turn_id: str) -> None:
        self.inbox = inbox
        self.clock = clock
        self.turn_id = turn_id
        self._waiting: list[Steered] = []
        self.open = True

    def put(self, item: Steered) -> bool:
        if not self.open:
            return False
        self._waiting.append(item)
        return True

    def take(self) -> list[Steered]:
        taken, self._waiting = self._waiting, []
        return taken

    async def consumed(self, items: list[Steered]) -> None:
        await self.inbox.mark_steered([i.row_id for i in items], self.turn_id,
                                      self.clock.now())

    def close(self) -> list[Steered]:
        """The turn ended: nothing more joins it; what it never took is returned."""
        self.open = False
        return self.take()


class MidTurnQueue:
    """Per person, the mailbox of their running turn (one turn at a time per person)."""

    def __init__(self, inbox: InboxStore, clock: Clock) -> None:
        self.inbox = inbox
        self.clock = clock
        self._running: dict[str, TurnMailbox] = {}

    def open(self, user_id: str, turn_id: str) -> TurnMailbox:
        mailbox = self._running[user_id] = TurnMailbox(self.inbox, self.clock, turn_id)
        return mailbox

    def running(self, user_id: str) -> bool:
        return user_id in self._running

    def running_row(self, user_id: str) -> int | None:
        """The inbox row of the person's running turn (`inbox-<row id>`), if one runs here."""
        mailbox = self._running.get(user_id)
        return int(mailbox.turn_id.removeprefix("inbox-")) if mailbox else None

    def offer(self, user_id: str, item: Steered) -> bool:
        """Hand a message to the person's running turn; False when none is running."""
        mailbox = self._running.get(user_id)
        return mailbox is not None and mailbox.put(item)

    def close(self, user_id: str, mailbox: TurnMailbox) -> list[Steered]:
        if self._running.get(user_id) is mailbox:
            del self._running[user_id]
        return mailbox.close()
