"""Telegram updates as the gateway's `IncomingMessage`s.

`classify` is pure: it says what an update is (text, a button press, a voice note, an audio
file, a photo, a file Valet cannot open with its caption, something Valet cannot read, or
nothing for Valet). `InboundHandler` does what that needs, and nothing slow: what Valet
cannot read gets one short sentence (queued through the gateway's outbox once per update,
like every reply), and everything else goes through the door (the gateway), which stores it
(duplicates stop on the update id) and applies the access policy. A voice note, an audio file
or a photo is stored as the file's id; its bytes are fetched (and a voice note or an audio
file transcribed) when its turn runs (bot.turn.media), never before the update is stored. Media
from an unknown sender go to the door as a placeholder, so a stranger gets the pairing reply
and costs no download.

What an update is: channels.telegram.kinds (a service message gets no reply at all).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from telegram import Update

from bot.contracts.envelopes import ButtonPress, IncomingMessage, MediaRef
from bot.gateway.door import Door, Said
from channels.telegram.kinds import (
    Attached,
    Audio,
    BotIdentity,
    Classified,
    Origin,
    Photo,
    Press,
    Text,
    Unreadable,
    Voice,
    classify,
)
from persona.lines import fill
from persona.lines_channels import TelegramLines

CHANNEL = "telegram"
MAX_VOICE_BYTES = 20 * 1024 * 1024  # the Bot API's own download limit
PHOTO_MIME = "image/jpeg"  # Telegram re-encodes every photo (not a file) as JPEG
VOICE_MIME = "audio/ogg"  # Telegram voice notes are OGG/Opus


class Replier(Protocol):
    """The channel side the handler needs: button answers (at once, not queued)."""

    async def answer_button(self, answer_ref: str, text: str) -> None: ...


@dataclass
class InboundSettings:
    groups: bool = False
    vision: bool = False
    hears_voice: bool = False  # a transcription model is configured (the gateway hears)


class InboundHandler:
    def __init__(self, door: Door, replier: Replier, *,
                 is_known: Callable[[str], Awaitable[bool]], settings: InboundSettings,
                 lines: TelegramLines, now: Callable[[], datetime]) -> None:
        self.lines = lines  # what the channel says itself (media it cannot read...)
        self.door = door
        self.replier = replier
        self.is_known = is_known
        self.settings = settings
        self.now = now
        self.me: BotIdentity | None = None  # set once the bot knows who it is

    async def handle(self, update: Update) -> None:
        assert self.me is not None, "start the channel before handling updates"
        item = classify(update, self.me, groups=self.settings.groups, now=self.now)
        if item is None:
            return
        if isinstance(item, Press):
            if item.parsed is None:
                await self.replier.answer_button(item.callback_id,
                                                 self.lines.telegram_invalid_button)
                return
            kind, prompt_id, option = item.parsed
            await self._receive(item.origin, option, ButtonPress(
                prompt_id, option, answer_ref=item.callback_id, kind=kind))
        elif isinstance(item, Text):
            await self._receive(item.origin, item.text)
        elif not await self.is_known(item.origin.address):
            await self._receive(item.origin, f"({_kind(item)})")  # the access policy answers
        elif isinstance(item, Voice):
            await self._voice(item)
        elif isinstance(item, Audio):
            await self._audio(item)
        elif isinstance(item, Photo):
            await self._photo(item)
        elif isinstance(item, Attached):
            # Read with what it came with: the model knows what it could not open.
            await self._say(item.origin, f"cannot_open:{item.what}", lambda: fill(
                self.lines.telegram_cannot_open_caption, what=item.what))
            await self._receive(item.origin, f"{item.caption}\n({_a(item.what)} came with "
                                "this message; I could not open it.)")
        else:
            await self._say(item.origin, f"unreadable:{item.what}", lambda: fill(
                self.lines.telegram_unreadable, what=item.what))

    async def _receive(self, origin: Origin, text: str, button: ButtonPress | None = None,
                       media: tuple[MediaRef, ...] = ()) -> None:
        await self.door.receive(IncomingMessage(
            channel=CHANNEL, address=origin.address, external_id=str(origin.update_id),
            text=text, received_at=origin.received_at, display_name=origin.display_name,
            button=button, media=media, account=origin.account,
            third_party=origin.third_party))

    async def _say(self, origin: Origin, kind: str, said: Said) -> None:
        """A short answer that needs no turn, queued once per update (a redelivery is not
        answered twice), in the language of the person it is for; a reply at the door: the
        meter lets one of a `kind` out once a while (bot.meter.gate)."""
        await self.door.answer_directly(CHANNEL, origin.address, said,
                                        dedupe_key=f"telegram-notice:{origin.update_id}",
                                        kind=f"door:{kind}")

    async def _voice(self, item: Voice) -> None:
        if not self.settings.hears_voice:
            await self._say(item.origin, "cannot_hear",
                            lambda: self.lines.telegram_cannot_hear)
            return
        # Stored as the file's id with no text: the gateway fetches and transcribes it when
        # its turn runs, writes the transcript into the row, and the reply's first line shows
        # it, so the person sees what Valet understood (bot.turn.media).
        await self._receive(item.origin, "", media=(
            MediaRef("voice", item.file_id, VOICE_MIME, item.size),))

    async def _audio(self, item: Audio) -> None:
        """An audio file is not the person talking: heard (when Valet hears) as a file with
        its caption; else said so, and its caption read."""
        if self.settings.hears_voice:
            await self._receive(item.origin, item.caption, media=(MediaRef(
                "audio", item.file_id, item.mime, item.size, name=item.name),))
        elif item.caption.strip():
            await self._say(item.origin, "cannot_hear_audio_caption",
                            lambda: self.lines.telegram_cannot_hear_audio_caption)
            named = f"An audio file (“{item.name}”)" if item.name else "An audio file"
            await self._receive(item.origin, f"{item.caption}\n({named} came with this "
                                "message; I could not listen to it.)")
        else:
            await self._say(item.origin, "cannot_hear_audio",
                            lambda: self.lines.telegram_cannot_hear_audio)

    async def give_up(self, update_id: int, address: str | None, reason: str) -> None:
        """An update that kept failing (or could not even be read): recorded as failed, its
        sender (a chat, or a group's member) told once when Valet knows them (the gateway
        decides)."""
        await self.door.give_up(IncomingMessage(
            channel=CHANNEL, address=address or "",
            external_id=str(update_id), text="", received_at=self.now()), reason)

    async def _photo(self, item: Photo) -> None:
        if self.settings.vision:
            # The file id, not the bytes: the inbox keeps the reference, and the gateway
            # fetches the photo (fetch_media) when the turn runs.
            await self._receive(item.origin, item.caption, media=(
                MediaRef("photo", item.file_id, PHOTO_MIME, item.size),))
        elif item.caption.strip():
            await self._say(item.origin, "cannot_see_caption",
                            lambda: self.lines.telegram_cannot_see_caption)
            await self._receive(item.origin, item.caption + "\n(A photo came with this "
                                "message; I could not see it.)")
        else:
            await self._say(item.origin, "cannot_see",
                            lambda: self.lines.telegram_cannot_see)


def _kind(item: Classified) -> str:
    if isinstance(item, Voice):
        return "a voice note"
    if isinstance(item, Audio):
        return "an audio file"
    if isinstance(item, Photo):
        return "a photo"
    return item.what if isinstance(item, Unreadable | Attached) else "a message"


def _a(what: str) -> str:
    """"a file “x.pdf”" -> "A file “x.pdf”" (the start of a sentence)."""
    return what[:1].upper() + what[1:]
