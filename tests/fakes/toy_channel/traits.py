"""What the toy channel is and can do, declared once: its spec's traits (spec.py), which its
sender carries (channel.py). It can do nothing but send: no buttons, no edits (approvals are
answered in words), no typing, no progress."""

from __future__ import annotations

from bot.contracts.channels import ChannelTraits

NAME = "toy"

TRAITS = ChannelTraits(NAME, "Toy", a_message="a toy message")
