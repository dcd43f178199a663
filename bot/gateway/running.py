"""The turns running in this process, and what may reach one while it runs: `/stop` (the
turn's cancel event) and a message of the same person that joins it (its mailbox,
bot.gateway.midturn). Both come from this process's own door, or, with several processes, as
signals from a web process (bot.work.control: `stop`, `steer`)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from bot.contracts.clock import Clock
from bot.contracts.envelopes import IncomingMessage
from bot.contracts.steering import Steered
from bot.gateway.inbox import InboxStore
from bot.gateway.midturn import MidTurnQueue, TurnMailbox
from bot.turn.commands import command_word

AnswersApproval = Callable[[str, str], Awaitable[bool]]


class RunningTurns:
    def __init__(self, inbox: InboxStore, clock: Clock, *, mid_turn: str = "steer",
                 answers_approval: AnswersApproval | None = None) -> None:
        self.inbox = inbox
        self.clock = clock
        self.mid_turn = mid_turn  # gateway.mid_turn: "steer" or "queue"
        # Whether a message answers an approval waiting for that person: it then waits for
        # its own turn, where the approvals step decides it.
        self.answers_approval = answers_approval
        self._stops: dict[str, asyncio.Event] = {}  # person -> their running turn's /stop
        self._mailboxes = MidTurnQueue(inbox, clock)

    def begin(self, user_id: str, turn_id: str, *, own_message: bool
              ) -> tuple[asyncio.Event, TurnMailbox | None]:
        """A turn starts: its cancel event, and (for a person's own message, not a trigger's
        run, whose reply is a notification) a mailbox for what they add while it runs."""
        stop = self._stops[user_id] = asyncio.Event()
        return stop, self._mailboxes.open(user_id, turn_id) if own_message else None

    def end(self, user_id: str, mailbox: TurnMailbox | None) -> None:
        """What the mailbox never took is still `received`: the drain claims it next."""
        self._stops.pop(user_id, None)
        if mailbox is not None:
            self._mailboxes.close(user_id, mailbox)

    def stop(self, user_id: str, text: str) -> bool:
        """/stop reaches a turn that is already running (it cannot wait in the queue behind
        it): its calls are cancelled and it ends with a short reply."""
        word = command_word(text)
        running = self._stops.get(user_id)
        if word is None or word[0] != "/stop" or running is None:
            return False
        running.set()
        return True

    def may_join(self, msg: IncomingMessage) -> bool:
        """Text (no button, choice or photo) that is not a command may join a running turn."""
        return self.mid_turn == "steer" and msg.button is None and msg.choice is None \
            and not msg.media and bool(msg.text.strip()) and command_word(msg.text) is None

    async def steer(self, user_id: str, msg: IncomingMessage, row_id: int) -> bool:
        """Hand a message to the person's running turn when it can join it (`may_join`) and
        does not answer a waiting approval."""
        if not self._mailboxes.running(user_id) or not self.may_join(msg):
            return False
        return await self._offer(user_id, row_id, msg.text)

    async def _offer(self, user_id: str, row_id: int, text: str) -> bool:
        if self.answers_approval is not None and await self.answers_approval(user_id, text):
            return False
        return self._mailboxes.offer(user_id, Steered(row_id, text))

    # --- signals from other processes (bot.work.control) ---------------------------------

    async def stop_heard(self, fields: dict[str, str]) -> None:
        """/stop for a person whose turn runs here: the /stop row is closed (if no drain took
        it yet: a compare-and-set), then the turn is stopped; its reply says so."""
        user_id, row_id = fields["user"], int(fields["row"])
        running = self._stops.get(user_id)
        if running is None:
            return
        if await self.inbox.close_unclaimed(row_id, "done", self.clock.now()):
            running.set()

    async def steer_heard(self, fields: dict[str, str]) -> None:
        """A message that may join the person's turn, if it runs here and began before it."""
        user_id, row_id = fields["user"], int(fields["row"])
        running = self._mailboxes.running_row(user_id)
        if running is not None and running < row_id:
            await self._offer(user_id, row_id, fields["text"])
