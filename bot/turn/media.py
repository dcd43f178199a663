"""Media that came with a person's message (a photo, a voice note), from the inbox row to the
LLM request and the reply.

    inbox row: MediaRef (the channel's durable file id; the bytes are not stored)
    -> the gateway, when the turn runs (`MediaReader.read`): photos' bytes from the channel;
       a voice note's bytes from the channel, then its words from the transcriber (the
       transcript is written to the inbox row, so a turn redone after a crash reuses it)
    -> this turn's requests: the user message as content parts, text + data-URL images
    -> the stored history: a placeholder ("[photo] the caption", "[voice] the words"), so
       later requests never carry megabytes of base64 again

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
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from bot.contracts.envelopes import Image, Inbound, MediaRef
from bot.plumbing.backoff import backoff_delay

log = logging.getLogger(__name__)

Message = dict[str, Any]

# Said in the request when the photo's bytes could not be fetched (the file expired, the
# channel was unreachable): the model answers from the caption and can say it saw nothing.
NOT_LOADED = "(A photo came with this message, but it could not be loaded.)"


class MediaUnavailable(Exception):
    """The channel cannot give the file's bytes (gone, too big, unreachable)."""


@runtime_checkable
class MediaSource(Protocol):
    """What a channel that receives media offers the gateway (Telegram: getFile)."""

    async def fetch_media(self, ref: MediaRef) -> bytes: ...


async def fetch_images(source: MediaSource | None, media: tuple[MediaRef, ...]
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


class MediaReader:
    """Reads a message's media when its turn runs: photos as images (one that cannot be
    fetched is left out), a voice note as words, tried `tries` times before it is given up."""

    def __init__(self, transcribe: Transcribe | None, *, tries: int = 3,
                 retry_seconds: float = 0.5) -> None:
        self.transcribe = transcribe
        self.tries = tries
        self.retry_seconds = retry_seconds

    async def read(self, source: MediaSource | None, media: tuple[MediaRef, ...],
                   text: str) -> ReadMedia:
        """`text` is the inbox row's: for a voice note, its transcript once it was heard."""
        images = await fetch_images(source, media)
        voice = next((ref for ref in media if ref.kind == "voice"), None)
        if voice is None:
            return ReadMedia(images)
        if text.strip():
            return ReadMedia(images, transcript=text)  # heard before (a turn redone)
        if self.transcribe is None or source is None:
            return ReadMedia(images, unreadable="no transcription model is configured")
        problem = ""
        for attempt in range(1, self.tries + 1):
            try:
                words = await self.transcribe(await source.fetch_media(voice), "voice.ogg")
                return ReadMedia(images, transcript=words)
            except Exception as err:  # the channel's or the transcriber's trouble, alike
                problem = f"{type(err).__name__}: {err}"
                log.warning("voice note %s not heard (try %d of %d): %s", voice.ref, attempt,
                            self.tries, problem)
            if attempt < self.tries:
                await asyncio.sleep(backoff_delay(attempt, base=self.retry_seconds,
                                                  cap=10 * self.retry_seconds))
        return ReadMedia(images, unreadable=problem)


def stored_text(msg: Inbound) -> str:
    """The person's message as the history keeps it: "[photo] caption" for a photo."""
    if not msg.media:
        return msg.text
    marks = " ".join(f"[{ref.kind}]" for ref in msg.media)
    return f"{marks} {msg.text}".strip()


def request_content(msg: Inbound) -> str | list[dict[str, Any]]:
    """The person's message as this turn's requests carry it: with its images as parts."""
    if not msg.images:
        photo_missing = any(ref.kind == "photo" for ref in msg.media)
        return f"{stored_text(msg)}\n{NOT_LOADED}" if photo_missing else stored_text(msg)
    parts: list[dict[str, Any]] = []
    if msg.text.strip():
        parts.append({"type": "text", "text": msg.text})
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
