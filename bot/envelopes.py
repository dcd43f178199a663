"""What travels between channels and the core: `Inbound` in, `Reply` out."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class ButtonPress:
    """A decision made with a button (Telegram inline keyboard, console number)."""

    approval_id: str
    option: str


@dataclass(frozen=True)
class IncomingMessage:
    """What a channel adapter hands the gateway, before anyone knows who sent it."""

    channel: str
    address: str  # chat id, phone number, "local"
    external_id: str  # the channel's own id (update id, MessageSid): duplicates stop on it
    text: str
    received_at: datetime
    display_name: str = ""
    button: ButtonPress | None = None


@dataclass(frozen=True)
class Inbound:
    user_id: str
    channel: str
    text: str
    received_at: datetime
    external_id: str = ""
    address: str = ""  # the sender's address on its channel (chat id, phone number)
    button: ButtonPress | None = None
    from_trigger: str | None = None  # task id when a trigger, not a person, speaks
    # Set by the gateway (from the inbox row) so a turn re-run after a crash is recognised.
    turn_id: str | None = None


@dataclass
class Reply:
    text: str
    approvals: list[Any] = field(default_factory=list)
    stop_reason: str | None = None
    turn_id: str | None = None
    # True when nothing should be sent at all (e.g. a duplicate delivery).
    silent: bool = False
