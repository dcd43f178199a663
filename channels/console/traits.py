"""What the terminal is and can do, declared once: its spec's traits (channels.console.spec),
which its senders carry (the local chat's, channels.console.channel, and the one beside
`valet serve`, channels.console.relay): it shows a turn's progress; an outcome is a new
line, not an edit; no buttons (approvals are answered by number or word)."""

from __future__ import annotations

from bot.contracts.channels import ChannelTraits

NAME = "console"

TRAITS = ChannelTraits(NAME, "the terminal", a_message="a message in the terminal",
                       progress=True)
