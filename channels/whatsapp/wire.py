"""WhatsApp as Twilio carries it: addresses, and the limits Twilio documents for WhatsApp.

Valet keeps a person's WhatsApp address as their bare E.164 number (as SMS does, so the
owner's phone number is theirs on both); on the wire it is `whatsapp:+15551234567`.
"""

from __future__ import annotations

PREFIX = "whatsapp:"
# Twilio takes a WhatsApp body of at most 1,600 characters (WhatsApp's own 4,096 is cut to
# Twilio's Messages limit); a quick-reply's body at most 1,024; a button's title 20, its id
# 200; a quick-reply sent in session (no approval) at most 3 buttons.
MAX_BODY = 1600
MAX_CARD_BODY = 1024
MAX_BUTTON_TITLE = 20
MAX_BUTTON_ID = 200
# Media a person sends: WhatsApp takes images up to 5 MB, any other media up to 16 MB.
MAX_IMAGE_BYTES = 5 * 1024 * 1024
MAX_MEDIA_BYTES = 16 * 1024 * 1024
# The types WhatsApp carries, as Twilio lists them, and what Valet makes of each.
IMAGES = frozenset({"image/jpeg", "image/jpg", "image/png"})
VOICE = frozenset({"audio/ogg"})  # a voice note: Opus in Ogg, as WhatsApp records it
AUDIO = frozenset({"audio/aac", "audio/mp4", "audio/mpeg", "audio/amr", "audio/mp3"})
STICKERS = frozenset({"image/webp"})
VIDEOS = frozenset({"video/mp4", "video/3gpp"})


def on_wire(address: str) -> str:
    """+15551234567 -> whatsapp:+15551234567."""
    return address if address.startswith(PREFIX) else PREFIX + address


def from_wire(value: str) -> str:
    """whatsapp:+15551234567 -> +15551234567."""
    return value.strip().removeprefix(PREFIX)


def media_kind(mime: str) -> str:
    """What a media type is to Valet: photo, voice, audio, sticker, video or document."""
    base = mime.split(";", 1)[0].strip().lower()
    if base in IMAGES:
        return "photo"
    if base in VOICE:
        return "voice"
    if base in AUDIO or base.startswith("audio/"):
        return "audio"
    if base in STICKERS:
        return "sticker"
    if base in VIDEOS or base.startswith("video/"):
        return "video"
    return "document"
