"""What the core knows of the channels: plain data, one `ChannelTraits` per channel, made
from each channel's spec (channels/registry.py) by the composition root and handed down. No
module below `channels/` names a channel: it reads these."""

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


def names(channels: Iterable[ChannelTraits]) -> tuple[str, ...]:
    return tuple(c.name for c in channels)


def for_messaging(channels: Iterable[ChannelTraits]) -> list[ChannelTraits]:
    """The channels Valet may write to someone else on, in the order it tries them."""
    return sorted((c for c in channels if c.messaging_order is not None),
                  key=lambda c: c.messaging_order or 0)


def named(channels: Sequence[ChannelTraits], name: str) -> ChannelTraits | None:
    return next((c for c in channels if c.name == name), None)
