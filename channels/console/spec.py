"""The terminal, described once (channels/spec.py): the owner's `valet chat`, in its own
process or attached to `valet serve` (bot.app.terminal). No settings turn it on and `valet
serve` builds no channel for it; the owner's address on it is always "local"."""

from __future__ import annotations

from bot.contracts.channels import ChannelTraits
from channels.spec import Abilities, ChannelSpec

NAME = "console"

SPEC = ChannelSpec(
    traits=ChannelTraits(NAME, "the terminal", a_message="a message in the terminal"),
    address='"local": the owner at their terminal',
    can=Abilities(),
    configured=lambda settings, env: False,  # `valet chat` runs it, not a setting
    turn_on="",
)
