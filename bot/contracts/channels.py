"""What the core knows of the channels: plain data, one `ChannelTraits` per channel, declared
once in the channel's package (channels/<name>/traits.py: its spec's, listed in
channels/registry.py) and read
by everyone: the composition root hands them down, and each channel's sender carries its own
(bot.channel.ChannelSender.traits). No module below `channels/` names a channel: it reads
these."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class ChannelTraits:
    name: str  # "telegram": the channel column of identities, the inbox and the outbox
    title: str  # "Telegram": how a person or an operator reads it
    # A message on it, as a sentence names one ("a Telegram message", "an SMS").
    a_message: str = "a message"
    # Its addresses are E.164 phone numbers: a contact's phone number reaches it.
    phone_numbers: bool = False
    # Its clients send /start when a person first opens the chat: /start is offered, and
    # listed, on such channels only.
    sends_start: bool = False
    # Its place when Valet writes to someone else for a person (lower first); None: never
    # used for that.
    messaging_order: int | None = None
    # What it can do. What it cannot, its sender does as nothing (bot.channel.ChannelSender).
    edit: bool = False  # changes a message already sent (an approval's outcome on its card)
    buttons: bool = False  # approval prompts as buttons (else answered in words)
    typing: bool = False  # shows that a turn is under way
    progress: bool = False  # shows what a running turn does (tool calls, streamed text)
    media: bool = False  # photos and voice notes, fetched by its sender when their turn runs
    # Billed in segments: a reply is held to what fits (its sender's `brevity`), the rest of
    # a long message goes on MORE.
    segments: bool = False
    # Its messages cost money: each is quoted by its sender and counted before it goes
    # (bot.meter.gate); the spec says in what unit (channels.spec.Usage).
    priced: bool = False


def names(channels: Iterable[ChannelTraits]) -> tuple[str, ...]:
    return tuple(c.name for c in channels)


def for_messaging(channels: Iterable[ChannelTraits]) -> list[ChannelTraits]:
    """The channels Valet may write to someone else on, in the order it tries them."""
    return sorted((c for c in channels if c.messaging_order is not None),
                  key=lambda c: c.messaging_order or 0)


def named(channels: Sequence[ChannelTraits], name: str) -> ChannelTraits | None:
    return next((c for c in channels if c.name == name), None)
