"""What the WhatsApp channel says itself, in its own words: its card's buttons and the line
above a message sent on another channel. The English is here; the other languages are
translations/<language>.yaml (read as persona/catalog/ is); a persona rewords any of them
under its `lines:` and `translations:` (channels.registry hands this group to load_persona).
Its media lines are Telegram's (the same sentences, persona's `Lines`)."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from persona.line_group import LineGroup


class WhatsAppLines(LineGroup):
    """Said by the WhatsApp channel itself (channels/whatsapp)."""

    translations_dir: ClassVar[Path | None] = Path(__file__).parent / "translations"

    # A card's quick-reply buttons (WhatsApp shows at most 20 characters of each).
    whatsapp_button_approve: str = "✅ Yes"
    whatsapp_button_cancel: str = "✖️ Cancel"
    # Above a message that WhatsApp would not take outside its 24-hour window, sent on the
    # person's other channel instead ({channel}: WhatsApp's name).
    whatsapp_elsewhere: str = ("({channel} lets me write to you first only within 24 hours of "
                               "your last message there, so this comes here.)")
