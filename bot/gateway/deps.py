"""What the gateway is built from (GatewayDeps) and what `receive` answers (ReceiveResult)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

from bot.contracts.clock import Clock
from bot.contracts.envelopes import ButtonPress, Reply
from bot.contracts.people import User
from bot.db import Database
from bot.gateway.budget import BudgetGate
from bot.gateway.inbox import InboxStore
from bot.gateway.locks import UserLocks
from bot.gateway.outbound import Outbound
from bot.gateway.pairing_notices import PairingNotices
from bot.memory.history import HistoryStore
from bot.people.access import AccessControl
from bot.people.identity import IdentityStore
from bot.people.users import UserStore
from bot.turn.media import MediaReader
from bot.work.relay import Relay

HandleMessage = Callable[..., Awaitable[Reply]]
ButtonAnswer = Callable[[User, ButtonPress], Awaitable[str]]
# One of the persona's lines, written when called: in the language of whoever Valet is speaking
# to then (persona.speaking), so a line said to Ana is in hers.
Line = Callable[[], str]


class ReceiveResult(Enum):
    ACCEPTED = "accepted"  # queued for its user's next turn
    JOINED = "joined"  # joined the user's running turn: that turn's reply answers it
    DUPLICATE = "duplicate"  # seen before: nothing happens
    REJECTED = "rejected"  # unknown or blocked sender: at most one short reply
    HANDLED = "handled"  # dealt with at the door (a /link code)


class TurnWatcher(Protocol):
    def turn_due(self, who: str) -> None: ...

    def turn_done(self, who: str) -> None: ...


@dataclass
class GatewayDeps:
    db: Database
    clock: Clock
    users: UserStore
    identities: IdentityStore
    access: AccessControl
    inbox: InboxStore
    outbound: Outbound
    history: HistoryStore
    handle_message: HandleMessage
    locks: UserLocks
    failure_line: Line  # what the user reads when their message could not be handled
    # ...when a voice note could not be heard, and when a message could not even be read
    # (stored or handled) after a few tries: said once, and everyone else's messages go on.
    voice_line: Line
    unreadable_line: Line
    media: MediaReader  # photos and voice notes, read when their turn runs
    max_attempts: int = 3  # a turn that crashes is tried this often (gateway.turn_attempts)
    retry_seconds: float = 0.2  # x attempt, before the next try
    # The short answer to a button press, given at once (before the turn runs): "Approving...",
    # "Already decided", "That isn't yours to decide".
    answer_button: ButtonAnswer | None = None
    # Whether a trigger run's reply stays unsent (it said it had nothing to report and its
    # task asks for silence then), by the run's key. A structured flag, never the text.
    silenced: Callable[[str], Awaitable[bool]] | None = None
    # A message sent while the person's turn runs: "steer" adds it to that turn (before its
    # next LLM call), "queue" gives it a turn of its own afterwards (gateway.mid_turn).
    mid_turn: str = "steer"
    # Whether a message (user id, text) answers an approval waiting for that person: it then
    # waits for its own turn, where the approvals step decides it.
    answers_approval: Callable[[str, str], Awaitable[bool]] | None = None
    # Several processes (Redis): a stored row is announced on the work stream and /stop or a
    # message joining a running turn is signalled (bot.work.relay), instead of being handled
    # by this process's drains. None: this process runs every turn itself.
    relay: Relay | None = None
    # Told when a person's drain found nothing of theirs left (the work stream acknowledges
    # the entries it held for them then).
    drained: Callable[[str], None] | None = None
    # Tells the owner of new pairing requests, at most once a while (None: never told).
    pairing_notices: PairingNotices | None = None
    # A person at today's allowance: their messages wait (None: no allowance).
    budget: BudgetGate | None = None
    # Told when a person's turn is due and when none of theirs is left, so background LLM
    # work gives way to them (bot.llm.person_first.PersonFirst).
    person_first: TurnWatcher | None = None
