"""What a Telegram update is, read without doing anything (`classify` is pure): text, a button
press, a voice note, an audio file, a photo, something Valet cannot open that came with a
caption, something it cannot read, or nothing for Valet.

What a message is comes from what it carries (`CONTENT`, Telegram's fields for what a person
sends). A message that carries none of them is a service message (a pin, a member joining,
the auto-delete timer, a chat background, a payment...) or an edit's shell: nothing to
answer. A caption is read with whatever it came with. A button's data says which prompt it
answers (its kind and id) and how, never a position.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from telegram import Message, PhotoSize, Update

from bot.contracts.envelopes import PromptKind, ThirdPartyText
from channels.telegram.quoted import forwarded, others_words, own_text

log = logging.getLogger(__name__)

# A button's data starts with what kind of prompt it answers: an approval, or the owner
# letting a stranger in.
CALLBACK_PREFIXES = {PromptKind.APPROVAL: "a", PromptKind.PAIRING: "p"}
# The largest of a photo's sizes under this is the one the model sees: Telegram's biggest
# rendition is usually well under it, and a few megabytes of base64 per request is plenty.
MAX_PHOTO_BYTES = 5 * 1024 * 1024


def callback_data(prompt_id: str, option: str, kind: PromptKind = PromptKind.APPROVAL) -> str:
    """What a prompt's button carries: the prompt's kind and id and the option, never a
    position."""
    data = f"{CALLBACK_PREFIXES[kind]}:{prompt_id}:{option}"
    if len(data.encode()) > 64:
        raise ValueError(f"prompt id too long for a Telegram button: {prompt_id!r}")
    return data


def parse_callback(data: str | None, kind: PromptKind = PromptKind.APPROVAL
                   ) -> tuple[str, str] | None:
    """(prompt id, option) of a button of a `kind` prompt; None for any other data."""
    parts = (data or "").split(":")
    if len(parts) != 3 or parts[0] != CALLBACK_PREFIXES[kind] or not parts[1] or not parts[2]:
        return None
    return parts[1], parts[2]


def pressed(data: str | None) -> tuple[PromptKind, str, str] | None:
    """Which prompt a button answers, and how: (kind, prompt id, option); None for data
    Valet cannot read."""
    for kind in PromptKind:
        parsed = parse_callback(data, kind)
        if parsed is not None:
            return kind, *parsed
    return None


@dataclass(frozen=True)
class Origin:
    update_id: int
    chat_id: int
    display_name: str
    received_at: datetime
    user_id: int | None = None  # in a group: the member who wrote or pressed
    # Someone else's words that came with the message (forwarded, quoted, replied to):
    # never the person's own text (channels.telegram.quoted).
    third_party: tuple[ThirdPartyText, ...] = ()

    @property
    def address(self) -> str:
        """Who this is to Valet: a private chat, or one member of a group ("chat:user"), so
        each member is a person of their own (their approvals, pairing, history)."""
        return member_address(self.chat_id, self.user_id)

    @property
    def account(self) -> str | None:
        """In a group, the member's own Telegram account (their private chat's id): a person
        Valet knows there is the same person in the group."""
        return str(self.user_id) if self.user_id is not None else None


def member_address(chat_id: int, user_id: int | None) -> str:
    return f"{chat_id}:{user_id}" if user_id is not None else str(chat_id)


def chat_of_address(address: str) -> int:
    """The chat a message to this address goes to (a group member's: their group)."""
    return int(address.split(":", 1)[0])


@dataclass(frozen=True)
class Text:
    origin: Origin
    text: str


@dataclass(frozen=True)
class Press:
    origin: Origin
    callback_id: str
    parsed: tuple[PromptKind, str, str] | None  # (kind, prompt id, option); None: unreadable


@dataclass(frozen=True)
class Voice:
    origin: Origin
    file_id: str
    size: int


@dataclass(frozen=True)
class Audio:
    """An audio file (music, a recording): not the person talking to Valet."""

    origin: Origin
    file_id: str
    size: int
    mime: str
    name: str  # its title (and performer), or its file name
    caption: str


@dataclass(frozen=True)
class Photo:
    origin: Origin
    file_id: str  # of the largest size under MAX_PHOTO_BYTES
    size: int
    caption: str


@dataclass(frozen=True)
class Attached:
    """Something Valet cannot open (a file, a video, a GIF...), with a caption to read."""

    origin: Origin
    what: str  # "a file “report.pdf”", "a video"
    caption: str


@dataclass(frozen=True)
class Unreadable:
    origin: Origin
    what: str  # "a sticker", "a location"


Classified = Text | Press | Voice | Audio | Photo | Attached | Unreadable

# What a person can send, by the Message field that carries it (checked in this order: a
# venue carries a location too, a GIF a document, a live photo a photo), and how Valet names
# it. Everything else a message carries is about the chat (service messages) or about the
# message (a reply, a forward, an edit): never answered on its own.
CONTENT: tuple[tuple[str, str], ...] = (
    ("text", "a message"), ("voice", "a voice note"), ("audio", "an audio file"),
    ("live_photo", "a live photo"), ("photo", "a photo"), ("animation", "a GIF"),
    ("document", "a file"), ("video", "a video"), ("video_note", "a video message"),
    ("paid_media", "paid media"), ("sticker", "a sticker"), ("venue", "a place"),
    ("location", "a location"), ("contact", "a contact"), ("poll", "a poll"),
    ("dice", "a dice"), ("game", "a game"), ("story", "a story"),
    ("checklist", "a checklist"), ("invoice", "an invoice"), ("giveaway", "a giveaway"))
# Of those, the ones that may come with a caption Valet reads (whatever it cannot open).
CAPTIONED = frozenset({"live_photo", "animation", "document", "video", "paid_media"})


@dataclass(frozen=True)
class BotIdentity:
    id: int
    username: str


def classify(update: Update, me: BotIdentity, *, groups: bool,
             now: Callable[[], datetime]) -> Classified | None:
    if update.callback_query is not None:
        query = update.callback_query
        chat = query.message.chat if query.message is not None else None
        in_group = chat is not None and chat.type != "private"
        origin = Origin(update.update_id, chat.id if chat is not None else query.from_user.id,
                        query.from_user.full_name, now(),
                        query.from_user.id if in_group else None)
        return Press(origin, query.id, pressed(query.data))
    message = update.message
    if message is None or message.from_user is None:
        return None  # edits, channel posts, business messages: nothing for Valet
    kind = content_of(message)
    if kind is None:
        log.debug("telegram update %s: a service message; no reply", update.update_id)
        return None
    text = own_text(message)  # the person's own words only: "" for a forward
    if message.chat.type != "private":
        if not groups or not _addressed(message, text, me):
            return None
        text = re.sub(rf"@{re.escape(me.username)}\b", "", text, flags=re.I).strip()
    origin = Origin(update.update_id, message.chat.id, message.from_user.full_name,
                    message.date or now(),
                    message.from_user.id if message.chat.type != "private" else None,
                    others_words(message, me.id))
    if forwarded(message) and message.voice is not None:
        # Someone else's voice: its words would be read as the person's own (a voice
        # note's transcript is its text), so it is not heard.
        return Unreadable(origin, "a forwarded voice note")
    return _classified(message, kind, origin, text, me)


def content_of(message: Message) -> str | None:
    """The field of `CONTENT` this message carries ("caption" for a caption with something
    Telegram added after this version of python-telegram-bot); None for a service message."""
    for field, _ in CONTENT:
        if getattr(message, field, None):
            return field
    return "caption" if message.caption else None


def _classified(message: Message, kind: str, origin: Origin, text: str, me: BotIdentity
                ) -> Classified | None:
    if kind == "text":
        command = normalise_command(text, me.username)
        return None if command is None else Text(origin, command)
    if message.voice is not None:
        return Voice(origin, message.voice.file_id, message.voice.file_size or 0)
    if message.audio is not None:
        audio = message.audio
        name = " - ".join(p for p in (audio.performer, audio.title) if p) or \
            audio.file_name or ""
        return Audio(origin, audio.file_id, audio.file_size or 0,
                     audio.mime_type or "audio/mpeg", name, text)
    if message.photo:  # (a live photo's still, too)
        best = largest_photo(message.photo)
        return Photo(origin, best.file_id, best.file_size or 0, text)
    what = _what(message, kind)
    if (text.strip() or origin.third_party) and (kind in CAPTIONED or kind == "caption"):
        return Attached(origin, what, text)  # (a forwarded caption is in origin.third_party)
    return Unreadable(origin, what)


def largest_photo(sizes: tuple[PhotoSize, ...]) -> PhotoSize:
    """The biggest rendition whose announced size is under the cap (the smallest when none
    is: fetching it then refuses it, and the model is told the photo could not be loaded)."""
    fitting = [p for p in sizes if (p.file_size or 0) <= MAX_PHOTO_BYTES]
    return max(fitting or sizes[:1], key=lambda p: (p.width * p.height, p.file_size or 0))


def normalise_command(text: str, bot_username: str) -> str | None:
    """Commands pass through as text ("/start link-CODE" becomes "/link CODE"); a command
    for another bot in a group is not for Valet (None)."""
    if not text.startswith("/"):
        return text
    head, _, rest = text.partition(" ")
    name, _, addressee = head.partition("@")
    if addressee and addressee.lower() != bot_username.lower():
        return None
    if name.lower() == "/start" and rest.strip().lower().startswith("link-"):
        return f"/link {rest.strip()[5:]}"
    return f"{name} {rest}".strip()


def _addressed(message: Message, text: str, me: BotIdentity) -> bool:
    replied = message.reply_to_message
    if replied is not None and replied.from_user is not None and replied.from_user.id == me.id:
        return True
    return f"@{me.username}".lower() in text.lower()


def _what(message: Message, kind: str) -> str:
    """How Valet names what came ("a file “report.pdf”")."""
    what = dict(CONTENT).get(kind, "something")
    document = message.document
    if kind == "document" and document is not None and document.file_name:
        return f"{what} “{document.file_name}”"
    return what
