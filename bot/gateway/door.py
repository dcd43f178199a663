"""The port a channel gets (never the App): the gateway's door to hand messages in, people's
identities (who is known, who said STOP), the time, the database for the channel's own
store, the persona's lines and words (what a channel says itself) and the command table's
menu. The composition root builds one `ChannelHost` and each configured channel from it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from bot.budget import Spending
from bot.channel import CommandMenu
from bot.contracts.clock import Clock
from bot.contracts.envelopes import IncomingMessage
from bot.db import Database
from bot.people.identity import IdentityStore
from persona.catalog import catalog_words
from persona.channel_words import WordsOf
from persona.lines import Lines

if TYPE_CHECKING:
    from bot.plumbing.spool import Spool

# What a channel says itself: the words, or how to write them. A function is called while
# speaking to the person the answer is for (persona.speaking), so the line is in their
# language; a channel knows addresses, not people, so the gateway finds whose it is.
Said = str | Callable[[], str]


class Door(Protocol):
    """What a channel hands to Valet (bot.gateway.gateway.Gateway is the door). Each returns
    once the message is durable: a channel acknowledges its platform after that."""

    async def receive(self, msg: IncomingMessage) -> object:
        """A message for a turn (the access policy decides who gets one)."""
        ...

    async def answer_at_the_door(self, msg: IncomingMessage, reply: Said | None, *,
                                 user_id: str | None, status: str = "done",
                                 kind: str = "reply") -> bool:
        """A message the channel answers itself (STOP, HELP): recorded, answered, closed.
        `kind`: what the meter calls the answer ("door:help": at most one a while)."""
        ...

    async def answer_directly(self, channel: str, address: str, text: Said, *,
                              dedupe_key: str, user_id: str | None = None,
                              kind: str = "reply") -> None:
        """A fixed short answer to a known address, once per key (no inbox row)."""
        ...

    async def count_failure(self, channel: str, external_id: str, error: str) -> int:
        """The channel could not store or handle this message once more: how many times so
        far, counted durably (a restart goes on counting)."""
        ...

    async def give_up(self, msg: IncomingMessage, reason: str) -> None:
        """A message that kept failing: recorded as failed with its reason; its sender, when
        Valet knows them, is told once. The channel moves on."""
        ...

    async def undelivered(self, outbox_id: int, reason: str) -> None:
        """A message the platform took, then reported lost for good (a delivery report
        after the send, and nothing the channel could do): its outbox row is dead with the
        reason, where a lost message is seen (the console's dead letters, /metrics)."""
        ...


class ChannelStatus(Protocol):
    """Where a channel says that it cannot be used at all (its API out of reach at start, its
    credentials refused) and when it can again (bot.gateway.outbound.Outbound): `/readyz`
    names it, notifications go around it, and the owner is told once on another channel
    (`tell`: a process that receives; a worker only marks it)."""

    async def channel_down(self, channel: str, reason: str, *, tell: bool = True) -> None: ...

    def channel_up(self, channel: str) -> None: ...


@dataclass(frozen=True)
class ChannelHost:
    door: Door
    identities: IdentityStore
    clock: Clock
    db: Database  # for the channel's own store (its own tables and migrations)
    lines: Lines  # the persona's: a channel says its own group (SmsLines, TelegramLines...)
    commands: CommandMenu  # the slash commands a channel's menu lists (Telegram's `/`)
    # What a channel that costs money adds to a person's day (SMS: each part's price).
    spending: Spending | None = None
    # Where a receiving process keeps webhooks while the database is away (bot.plumbing.spool);
    # None: a process that receives none, or a test that needs none.
    spool: Spool | None = None
    health: ChannelStatus | None = None  # None: nobody to tell (tests)
    # A channel's own group of lines (channels/<name>/lines.py) as the persona says it, in the
    # listener's language: `words(WhatsAppLines)`. The catalog's by default (tests).
    words: WordsOf = catalog_words
