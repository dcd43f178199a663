"""The toy channel's own section of valet.yaml (`toy:`), declared in its package as a built-in
channel declares its own (channels/whatsapp/settings.py): `channel_modules:` brings it, and
the loader checks it with the rest of the file (a typo is a mistake with its line)."""

from __future__ import annotations

import pydantic

from bot.config.channel_settings import ChannelSection
from bot.config.sections import Section


class ToySettings(Section):
    # Signed under every message Valet posts to the toy service; None: unsigned.
    signature: str | None = pydantic.Field(None, min_length=1, max_length=40)


SECTION = ChannelSection("toy", ToySettings, env={"VALET_TOY_SIGNATURE": ("signature",)})
