"""The channel port: the few things every adapter (console, Telegram, SMS) does for the core.

Adapters only translate: inbound, they verify and normalise to an `IncomingMessage` for the
gateway; outbound, they render an `OutboundMessage` (text + typed approval prompts) their own
way. The core renders nothing for any channel. Every sender is a `ChannelSender`: what a
channel cannot do (SMS cannot edit a message or show typing) the base does as nothing, and
the channel's traits, declared once in its spec, say what it can.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from bot.contracts.channels import ChannelTraits
from bot.contracts.envelopes import LoopEvent, MediaRef, OutboundMessage


@dataclass(frozen=True)
class Brevity:
    """What "brief" means on a channel, for a reply that must fit (bot.turn.brief)."""

    fits: Callable[[str], bool]  # the text, as written, fits once the channel renders it
    about_chars: int  # what to ask the model for


class TransientSendError(Exception):
    """Worth retrying (network trouble, 5xx, rate limits); `retry_after` when the channel
    said how long to wait."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class ChannelDown(Exception):
    """The channel refuses Valet itself (its credentials were rejected: Telegram's 401, a
    Twilio authentication error): no message can go on it until that is fixed. Messages wait
    in the outbox, in order, and go once it works again (bot.gateway.health)."""


class PermanentSendError(Exception):
    """No retry will help (bad address, blocked by the person, opted out). `unreachable`:
    the identity should not be written to again until the person writes first."""

    def __init__(self, message: str, *, unreachable: bool = False,
                 opted_out: bool = False) -> None:
        super().__init__(message)
        self.unreachable = unreachable
        self.opted_out = opted_out


class PartlySent(Exception):
    """The first `parts_sent` parts of a long message went out and the channel hands the rest
    back: it goes on later (from part `parts_sent`), after any urgent message to the same
    address. Not a failure: nothing counts towards giving up."""

    def __init__(self, parts_sent: int) -> None:
        super().__init__(f"{parts_sent} parts sent; the rest goes later")
        self.parts_sent = parts_sent


@dataclass(frozen=True)
class MenuCommand:
    """A slash command as a channel's command menu shows it (Telegram's `/` menu); the list
    comes from the command table (bot.turn.commands), never from the channel."""

    name: str  # "/pending"
    description: str  # its /help line
    owner_only: bool = False


class CommandMenu(Protocol):
    def menu(self, channel: str) -> list[MenuCommand]:
        """The commands `channel` offers, in the table's order."""
        ...


@dataclass(frozen=True)
class Quote:
    """What a message will be once sent now: its parts, their segments, their price (a free
    channel's: one part, nothing to pay)."""

    parts: int = 1
    segments: int = 0
    micros: int = 0


class ChannelSender:
    """A channel as the outbox and the gateway call it: every channel's sender is one of these
    (console, Telegram, SMS, a channel added from valet.yaml). Only `send` must be written;
    what a channel cannot do, the default here does as nothing, and its `traits` (declared
    once, in its spec) say what it can, for whoever asks: nobody probes a sender for a
    method."""

    traits: ChannelTraits  # its spec's (channels/<name>/spec.py)
    # Where a notification may go when the person has no preferred channel: False for a window
    # on a conversation (the owner's terminal beside `valet serve`), never somewhere to send
    # what nobody asked for there.
    routable: bool = True

    @property
    def name(self) -> str:
        return self.traits.name

    async def send(self, message: OutboundMessage) -> str | None:
        """Deliver one outbox message; returns the channel's id for it (for later edits).
        Raises TransientSendError, PermanentSendError, ChannelDown or PartlySent."""
        raise NotImplementedError

    async def edit(self, address: str, message_id: str, text: str) -> None:
        """Change a message already sent (and drop its buttons): an approval's outcome. Asked
        only of a channel whose traits say `edit`."""

    async def answer_button(self, answer_ref: str, text: str) -> None:
        """Acknowledge a button press at once ("Approved", "Already decided"); a channel
        without buttons is never pressed."""

    async def typing(self, address: str) -> None:
        """Show that a turn is under way (traits.typing)."""

    async def progress(self, address: str, event: LoopEvent) -> None:
        """What the turn is doing now (tool calls, streamed text), as the channel shows it
        (traits.progress)."""

    def ready_in(self, address: str) -> float:
        """Seconds until a message to `address` may go (0: now). A channel that keeps its
        platform's pace per address (Telegram: about one message a second per chat) says
        more: the deliverer asks before it takes a message for an address, so an address
        that must wait holds no delivery slot other addresses could use."""
        return 0.0

    def brevity(self, *, triggered: bool) -> Brevity | None:
        """What "brief" means here (bot.turn.brief): for a triggered run's reply (a summary
        by SMS: a few segments), else for a reply to a person (a longer answer gets one
        shortening pass). None: no limit beyond splitting."""
        return None

    async def quote(self, message: OutboundMessage) -> Quote:
        """What the message costs if it is sent now (bot.meter.gate counts it before it goes),
        asked of a channel whose traits say `priced`."""
        return Quote()

    async def fetch_media(self, ref: MediaRef) -> bytes:
        """A photo's or a voice note's bytes, when its turn runs (traits.media)."""
        raise LookupError(f"{self.name} keeps no media")

    async def close(self) -> None:
        """Release what the sender holds (its HTTP client), after the last message went."""
