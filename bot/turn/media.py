"""Media that came with a person's message (a photo, a voice note, an audio file), from the
inbox row to the LLM request and the reply.

    inbox row: MediaRef (the channel's durable file id; the bytes are not stored)
    -> the gateway, when the turn runs (`MediaReader.read`): photos' bytes from the channel;
       a voice note's bytes from the channel, then its words from the transcriber (the
       transcript is written to the inbox row, so a turn redone after a crash reuses it); an
       audio file (music, a recording: not the person speaking to Valet) likewise, its words
       kept with its MediaRef (`heard`), and the row's text stays its caption
    -> this turn's requests: the user message as content parts, text + data-URL images
    -> the stored history: a placeholder ("[photo] the caption", "[voice] the words",
       "[audio file “name”: “its words”] the caption"), so later requests never carry
       megabytes of base64 again

Why references and not bytes in the inbox, and why at turn time: a Telegram file_id is
durable, a few dozen bytes, and fetching again after a crash costs one getFile; the channel
acknowledges its platform as soon as the row is stored, so a download that hangs or fails
never holds the poller (a failing voice note is answered once, "I couldn't make out that
voice note", and everyone else's messages go on).
"""

from __future__ import annotations

import asyncio
import base64
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from bot.channel import ChannelSender
from bot.contracts.envelopes import Image, Inbound, MediaRef
from bot.plumbing.backoff import backoff_delay
from bot.turn.third_party import with_third_party

log = logging.getLogger(__name__)

Message = dict[str, Any]

# Said in the request when the photo's bytes could not be fetched (the file expired, the
# channel was unreachable): the model answers from the caption and can say it saw nothing.
NOT_LOADED = "(A photo came with this message, but it could not be loaded.)"


class MediaUnavailable(Exception):
    """The channel cannot give the file's bytes (gone, too big, unreachable)."""


async def fetch_images(source: ChannelSender | None, media: tuple[MediaRef, ...]
                       ) -> tuple[Image, ...]:
    """The bytes of every photo that can still be fetched; one that cannot is left out (the
    request then says it could not be loaded) and the turn goes on."""
    images: list[Image] = []
    for ref in media:
        if ref.kind != "photo":
            continue
        if source is None:
            log.warning("a %s came on a channel that cannot fetch media", ref.kind)
            continue
        try:
            images.append(Image(ref.mime, await source.fetch_media(ref)))
        except MediaUnavailable as err:
            log.warning("photo %s not loaded: %s", ref.ref, err)
        except Exception:  # the channel's own trouble: the person still gets an answer
            log.warning("photo %s not loaded", ref.ref, exc_info=True)
    return tuple(images)


# Speech to text (bot.llm.transcribe.Transcriber.transcribe): audio bytes and a file name -> words.
Transcribe = Callable[[bytes, str], Awaitable[str]]


@dataclass(frozen=True)
class ReadMedia:
    """What a message's media come to for its turn."""

    images: tuple[Image, ...] = ()
    transcript: str | None = None  # a voice note's words
    unreadable: str | None = None  # why a voice note could not be heard: no turn runs
    heard: tuple[MediaRef, ...] | None = None  # the refs with an audio file's words (to keep)


class MediaReader:
    """Reads a message's media when its turn runs: photos as images (one that cannot be
    fetched is left out), a voice note as words, tried `tries` times before it is given up."""

    def __init__(self, transcribe: Transcribe | None, *, tries: int = 3,
                 retry_seconds: float = 0.5) -> None:
        self.transcribe = transcribe
        self.tries = tries
        self.retry_seconds = retry_seconds

    async def read(self, source: ChannelSender | None, media: tuple[MediaRef, ...],
                   text: str) -> ReadMedia:
        """`text` is the inbox row's: for a voice note, its transcript once it was heard."""
        images = await fetch_images(source, media)
        heard = await self._audio(source, media) \
            if any(ref.kind == "audio" and ref.heard is None for ref in media) else None
        voice = next((ref for ref in media if ref.kind == "voice"), None)
        if voice is None:
            return ReadMedia(images, heard=heard)
        if text.strip():
            return ReadMedia(images, transcript=text)  # heard before (a turn redone)
        if self.transcribe is None or source is None:
            return ReadMedia(images, unreadable="no transcription model is configured")
        words, problem = await self._hear(self.transcribe, source, voice, "voice.ogg")
        if words is None:
            return ReadMedia(images, unreadable=problem)
        return ReadMedia(images, transcript=words)

    async def _audio(self, source: ChannelSender | None, media: tuple[MediaRef, ...]
                     ) -> tuple[MediaRef, ...]:
        """The refs again, each audio file's words heard (an empty `heard` when they could
        not be made out: the turn runs on the caption, and says so)."""
        refs = []
        for ref in media:
            if ref.kind == "audio" and ref.heard is None and self.transcribe is not None \
                    and source is not None:
                words, _ = await self._hear(self.transcribe, source, ref, audio_file_name(ref))
                ref = replace(ref, heard=(words or "").strip())
            refs.append(ref)
        return tuple(refs)

    async def _hear(self, transcribe: Transcribe, source: ChannelSender, ref: MediaRef,
                    file_name: str) -> tuple[str | None, str]:
        """(the words, "") or (None, why not), after `tries` tries."""
        problem = ""
        for attempt in range(1, self.tries + 1):
            try:
                return await transcribe(await source.fetch_media(ref), file_name), ""
            except Exception as err:  # the channel's or the transcriber's trouble, alike
                problem = f"{type(err).__name__}: {err}"
                log.warning("%s %s not heard (try %d of %d): %s", ref.kind, ref.ref, attempt,
                            self.tries, problem)
            if attempt < self.tries:
                await asyncio.sleep(backoff_delay(attempt, base=self.retry_seconds,
                                                  cap=10 * self.retry_seconds))
        return None, problem


# An audio file's type as a file name ending: the transcription endpoint reads the format
# from the name it is given.
_AUDIO_ENDINGS = {"audio/mpeg": "mp3", "audio/mp3": "mp3", "audio/mp4": "m4a",
                  "audio/x-m4a": "m4a", "audio/m4a": "m4a", "audio/ogg": "ogg",
                  "audio/opus": "ogg", "audio/wav": "wav", "audio/x-wav": "wav",
                  "audio/wave": "wav", "audio/flac": "flac", "audio/x-flac": "flac",
                  "audio/webm": "webm", "audio/aac": "m4a"}


def audio_file_name(ref: MediaRef) -> str:
    return f"audio.{_AUDIO_ENDINGS.get(ref.mime.lower(), 'mp3')}"


def stored_text(msg: Inbound) -> str:
    """The person's message as the history keeps it: "[photo] caption" for a photo; an
    audio file with what was heard of it."""
    said = msg.text
    if msg.media:
        said = f"{' '.join(_mark(ref) for ref in msg.media)} {msg.text}".strip()
    return with_third_party(said, msg.third_party) if msg.third_party else said


def _mark(ref: MediaRef) -> str:
    if ref.kind != "audio":
        return f"[{ref.kind}]"
    named = f"audio file “{ref.name}”" if ref.name else "audio file"
    if ref.heard:
        return f"[{named}; its words: “{ref.heard}”]"
    if ref.heard is None:
        return f"[{named}; not listened to]"
    return f"[{named}; its words could not be made out]"


def request_content(msg: Inbound) -> str | list[dict[str, Any]]:
    """The person's message as this turn's requests carry it: with its images as parts."""
    if not msg.images:
        photo_missing = any(ref.kind == "photo" for ref in msg.media)
        return f"{stored_text(msg)}\n{NOT_LOADED}" if photo_missing else stored_text(msg)
    parts: list[dict[str, Any]] = []
    said = with_third_party(msg.text, msg.third_party) if msg.third_party else msg.text
    if said.strip():
        parts.append({"type": "text", "text": said})
    parts += [image_part(image) for image in msg.images]
    return parts


def image_part(image: Image) -> dict[str, Any]:
    data = base64.b64encode(image.data).decode("ascii")
    return {"type": "image_url", "image_url": {"url": f"data:{image.mime};base64,{data}"}}


def heard_line(media: tuple[MediaRef, ...], text: str) -> str | None:
    """For a voice note (`text` is its transcript): the reply's first line, so the person
    sees what Valet understood. None for anything else."""
    if not any(ref.kind == "voice" for ref in media) or not text.strip():
        return None
    return f"🎤 “{text.strip()}”"


def user_message(msg: Inbound) -> dict[str, Any]:
    """The person's message as this turn's requests carry it (a photo as an image)."""
    return {"role": "user", "content": request_content(msg)}


def stored_user_message(msg: Inbound) -> dict[str, Any]:
    """The person's message as the history keeps it (a photo as "[photo] caption")."""
    return {"role": "user", "content": stored_text(msg)}


# --- this turn's note --------------------------------------------------------------------
# What changes from turn to turn or minute to minute (the person's current time, the steps'
# context lines: memory recalled, what waits, the plan) goes with the newest message, after
# the history, never into the system prompt that heads every request: a server's prompt
# cache then reuses the system prompt, the tools and the whole history, and reads only the
# new messages. The note follows the person's words in their message (the same words begin
# it in the next turn's history, so the shared prefix runs through them), marked as Valet's,
# not theirs. Only the request carries it: the history keeps the person's words alone.

NOTE_HEAD = "[Valet's note for this turn, not written by the person]"


def note_text(lines: Sequence[str]) -> str:
    return "\n".join([NOTE_HEAD, *(line for line in lines if line)])


def with_note(message: Message, lines: Sequence[str]) -> Message:
    """`message` (the person's newest) with the note after their words."""
    if not any(lines):
        return message
    note = note_text(lines)
    content = message.get("content")
    if isinstance(content, list):  # a photo: the note is one more text part
        return {**message, "content": [*content, {"type": "text", "text": note}]}
    said = content if isinstance(content, str) else ""
    return {**message, "content": f"{said}\n\n{note}" if said else note}
