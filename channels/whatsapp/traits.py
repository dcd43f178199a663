"""What WhatsApp is and can do, declared once: its spec's traits (channels.whatsapp.spec),
which its sender carries (channels.whatsapp.sender). Approval cards as quick-reply buttons
(answered by the turn's reply: a press is a message), photos and voice notes fetched when
their turn runs, every message priced (per message, not per segment); no edits, no typing,
only the final text."""

from __future__ import annotations

from bot.contracts.channels import ChannelTraits

NAME = "whatsapp"

TRAITS = ChannelTraits(NAME, "WhatsApp", a_message="a WhatsApp message", buttons=True,
                       media=True, priced=True)
