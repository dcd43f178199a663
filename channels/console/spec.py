"""The terminal, described once (channels/spec.py): the owner's `valet chat`, in its own
process or attached to `valet serve` (bot.app.terminal). No settings turn it on and `valet
serve` builds no channel for it; the owner's address on it is always "local"."""

from __future__ import annotations

from channels.console.traits import TRAITS
from channels.spec import ChannelSpec

SPEC = ChannelSpec(
    traits=TRAITS,
    address='"local": the owner at their terminal',
    configured=lambda settings, env: False,  # `valet chat` runs it, not a setting
    turn_on="",
)
