"""What Telegram is and can do, declared once: its spec's traits (channels.telegram.spec),
which its sender carries (channels.telegram.adapter): edits, buttons, typing, a turn's
progress, photos and voice notes."""

from __future__ import annotations

from bot.contracts.channels import ChannelTraits

NAME = "telegram"

TRAITS = ChannelTraits(NAME, "Telegram", a_message="a Telegram message", sends_start=True,
                       messaging_order=0, edit=True, buttons=True, typing=True, progress=True,
                       media=True)
