"""A WhatsApp message, from Twilio's form to the gateway's door.

The sender is `From` (whatsapp:+E164) as a bare number, their WhatsApp profile name
(ProfileName) the display name. Every message opens the person's 24-hour window. A press of a
card's button (ButtonPayload) is the card's choice, bound to the card its id names
(channels.whatsapp.cards); a payload Valet never made is read as the button's words. Media go
as on Telegram: a voice note is heard and a photo seen when the turn runs (the inbox keeps
Twilio's MediaUrl, bot.turn.media), an audio file heard with its caption; a document or a
video is said to be unreadable and its caption read; a sticker or a location answered in one
line. A sender Valet does not know reaches the access policy only (pairing): never the LLM.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime

from bot.contracts.envelopes import ButtonPress, IncomingMessage, MediaRef
from bot.gateway.door import ChannelHost, Said
from channels.whatsapp.cards import press_of
from channels.whatsapp.store import WhatsAppStore
from channels.whatsapp.traits import NAME
from channels.whatsapp.wire import from_wire, media_kind
from persona.lines import fill

log = logging.getLogger(__name__)

_WHAT = {"document": "a document", "video": "a video", "sticker": "a sticker",
         "audio": "an audio file", "voice": "a voice note", "photo": "a photo"}


class WhatsAppInbound:
    def __init__(self, host: ChannelHost, store: WhatsAppStore, *, vision: bool = False,
                 hears_voice: bool = False) -> None:
        self.door = host.door
        self.identities = host.identities
        self.clock = host.clock
        self.lines = host.lines
        self.store = store
        self.vision = vision
        self.hears_voice = hears_voice  # a transcription model is configured

    async def handle(self, form: Mapping[str, str], *,
                     received_at: datetime | None = None) -> None:
        """Everything to do before Twilio is answered: when this returns, the message is
        durable (or was seen before)."""
        sid = form.get("MessageSid") or ""
        address = from_wire(form.get("From", ""))
        at = received_at or self.clock.now()
        await self.store.wrote(address, at)  # Twilio's window opened with this message
        msg = IncomingMessage(channel=NAME, address=address, external_id=sid,
                              text=form.get("Body", ""), received_at=at,
                              display_name=form.get("ProfileName", "").strip()[:100])
        payload = form.get("ButtonPayload", "")
        if payload:
            press = press_of(payload)
            await self._receive(msg, form.get("ButtonText") or msg.text, button=press)
            return
        media = _media(form)
        located = bool(form.get("Latitude") and form.get("Longitude"))
        if not media and not located:
            await self._receive(msg, msg.text)
        elif await self.identities.get(NAME, address) is None:
            what = "a location" if located else _WHAT[media[0].kind]
            await self._receive(msg, f"({what})")  # the access policy answers
        elif located:
            await self._say(msg, "unreadable:a location", lambda: fill(
                self.lines.telegram_unreadable, what="a location"))
        else:
            await self._media(msg, media[0])

    async def _media(self, msg: IncomingMessage, ref: MediaRef) -> None:
        caption = msg.text
        if ref.kind == "voice":
            if self.hears_voice:  # heard when its turn runs; the reply shows what was heard
                await self._receive(msg, "", media=(ref,))
            else:
                await self._say(msg, "cannot_hear",
                                lambda: self.lines.telegram_cannot_hear)
        elif ref.kind == "audio":
            if self.hears_voice:
                await self._receive(msg, caption, media=(ref,))
            elif caption.strip():
                await self._say(msg, "cannot_hear_audio_caption",
                                lambda: self.lines.telegram_cannot_hear_audio_caption)
                await self._receive(msg, f"{caption}\n(An audio file came with this message; "
                                    "I could not listen to it.)")
            else:
                await self._say(msg, "cannot_hear_audio",
                                lambda: self.lines.telegram_cannot_hear_audio)
        elif ref.kind == "photo":
            if self.vision:  # fetched (fetch_media) when the turn runs
                await self._receive(msg, caption, media=(ref,))
            elif caption.strip():
                await self._say(msg, "cannot_see_caption",
                                lambda: self.lines.telegram_cannot_see_caption)
                await self._receive(msg, f"{caption}\n(A photo came with this message; I "
                                    "could not see it.)")
            else:
                await self._say(msg, "cannot_see",
                                lambda: self.lines.telegram_cannot_see)
        elif ref.kind in ("document", "video") and caption.strip():
            what = _WHAT[ref.kind]
            await self._say(msg, f"cannot_open:{what}", lambda: fill(
                self.lines.telegram_cannot_open_caption, what=what))
            await self._receive(msg, f"{caption}\n({what[:1].upper()}{what[1:]} came with "
                                "this message; I could not open it.)")
        else:
            await self._say(msg, f"unreadable:{ref.kind}", lambda: fill(
                self.lines.telegram_unreadable, what=_WHAT[ref.kind]))

    async def _receive(self, msg: IncomingMessage, text: str, *,
                       button: ButtonPress | None = None,
                       media: tuple[MediaRef, ...] = ()) -> None:
        await self.door.receive(IncomingMessage(
            channel=NAME, address=msg.address, external_id=msg.external_id, text=text,
            received_at=msg.received_at, display_name=msg.display_name, button=button,
            media=media))

    async def _say(self, msg: IncomingMessage, kind: str, said: Said) -> None:
        """A short answer that needs no turn, once per message, in the language of the person
        it is for; a reply at the door (the meter lets one of a `kind` out once a while)."""
        await self.door.answer_directly(NAME, msg.address, said,
                                        dedupe_key=f"whatsapp-notice:{msg.external_id}",
                                        kind=f"door:{kind}")


def _media(form: Mapping[str, str]) -> list[MediaRef]:
    """The media Twilio listed (WhatsApp carries one a message), by what they are."""
    try:
        count = max(0, min(int(form.get("NumMedia") or 0), 10))
    except ValueError:
        count = 0
    found = []
    for i in range(count):
        url, mime = form.get(f"MediaUrl{i}", ""), form.get(f"MediaContentType{i}", "")
        if url:
            found.append(MediaRef(media_kind(mime), url, mime.split(";", 1)[0].strip()))
    return found
