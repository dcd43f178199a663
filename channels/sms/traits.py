"""What SMS is and can do, declared once: its spec's traits (channels.sms.spec), which its
sender carries (channels.sms.adapter). No edits, no buttons (approvals are answered by
reply), no typing, only the final text (every message costs): billed in segments."""

from __future__ import annotations

from bot.contracts.channels import ChannelTraits

NAME = "sms"

TRAITS = ChannelTraits(NAME, "SMS", a_message="an SMS", phone_numbers=True, messaging_order=1,
                       segments=True, priced=True)
