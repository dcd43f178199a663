"""Mail as a person reads it: headers decoded (RFC 2047), the text body (text/plain preferred,
else the HTML turned into text), attachments by name and size.

Everything here parses what a stranger wrote, so it runs in the offload worker
(`bot.plumbing.offload.run_bounded`), never on the event loop: the stdlib `email` parser recurses on
nested parts and is not linear on every input. This module imports the standard library,
`bot.text.sanitize` and `agents.tools.html_text` only (the worker imports it on first use).
"""

from __future__ import annotations

import email
import email.parser
import email.utils
from dataclasses import dataclass
from datetime import datetime
from email import policy
from email.header import decode_header, make_header
from email.message import EmailMessage, Message, MIMEPart
from typing import Any

from bot.text.sanitize import clean_text

SUMMARY_FIELDS = ("FROM", "SUBJECT", "DATE")
HEADER_FIELDS = ("FROM", "TO", "CC", "SUBJECT", "DATE", "MESSAGE-ID", "IN-REPLY-TO",
                 "REFERENCES", "REPLY-TO")


@dataclass(frozen=True)
class MailSummary:
    """One line of a listing: who, what, when."""

    uid: str
    from_name: str  # the display name, else the address
    from_addr: str
    subject: str
    date: datetime | None
    seen: bool


@dataclass(frozen=True)
class MailHeaders:
    """What a reply needs to stay in its thread (reply_email imports this shape)."""

    uid: str
    message_id: str
    references: tuple[str, ...]
    in_reply_to: str
    subject: str
    from_addr: str  # the bare address
    to: tuple[str, ...]  # bare addresses
    cc: tuple[str, ...]
    date: datetime | None
    reply_to: tuple[str, ...] = ()  # where the sender asked replies to go (bare addresses)
    from_name: str = ""


@dataclass(frozen=True)
class Attachment:
    name: str
    content_type: str
    size: int | None  # bytes; None when the message was cut before this part ended


@dataclass(frozen=True)
class MessageText:
    headers: MailHeaders
    body: str
    body_kind: str  # "text", "html" (converted), or "none"
    attachments: tuple[Attachment, ...]
    body_truncated_from: int | None  # the body's full length when it was cut to the limit
    too_deep: bool  # HTML nested deeper than the parser follows: some text is missing


def one_line(text: str) -> str:
    """Sender-written header text, cleaned and on one line."""
    return " ".join(clean_text(text).split())


def _parse(raw: bytes) -> EmailMessage:
    message = email.message_from_bytes(raw, policy=policy.default)
    assert isinstance(message, EmailMessage)  # policy.default builds EmailMessage
    return message


def _raw_header(message: Message, name: str) -> str:
    for key, value in message.raw_items():
        if key.lower() == name.lower():
            return str(value)
    return ""


def _header(message: Message, name: str) -> str:
    """The header's decoded text; a header the strict parser cannot read is decoded loosely."""
    try:
        value = message.get(name)
        return one_line(str(value)) if value is not None else ""
    except Exception:  # hostile headers can trip the policy's parser; never lose the mail
        raw = _raw_header(message, name)
        try:
            return one_line(str(make_header(decode_header(raw))))
        except Exception:
            return one_line(raw)


def _addresses(message: Message, name: str) -> list[tuple[str, str]]:
    """(display name, address) pairs of an address header."""
    try:
        value = message.get(name)
        found = [(a.display_name, a.addr_spec) for a in getattr(value, "addresses", ())]
    except Exception:
        found = email.utils.getaddresses([_header(message, name)])
    return [(one_line(n), one_line(a)) for n, a in found if a or n]


def _date(message: Message) -> datetime | None:
    try:
        value = message.get("date")
        when = getattr(value, "datetime", None)
    except Exception:
        when = None
    if when is None:
        try:
            when = email.utils.parsedate_to_datetime(_raw_header(message, "date"))
        except (TypeError, ValueError, IndexError):
            return None
    return when if isinstance(when, datetime) and when.tzinfo is not None else None


def _ids(text: str) -> tuple[str, ...]:
    return tuple(part for part in text.split() if part.startswith("<") and part.endswith(">"))


def summary_of(uid: str, header_bytes: bytes, seen: bool) -> MailSummary:
    message = _parse(header_bytes)
    senders = _addresses(message, "from")
    name, addr = senders[0] if senders else ("", "")
    return MailSummary(uid, name or addr or "(unknown sender)", addr,
                       _header(message, "subject"), _date(message), seen)


def summaries_of(items: list[tuple[str, bytes, bool]]) -> list[MailSummary]:
    """Listing lines of (uid, header bytes, seen) fetched in one go (one worker round trip)."""
    return [summary_of(uid, raw, seen) for uid, raw, seen in items]


def headers_of(uid: str, header_bytes: bytes) -> MailHeaders:
    return _headers(uid, _parse(header_bytes))


def _headers(uid: str, message: Message) -> MailHeaders:
    senders = _addresses(message, "from")
    name, addr = senders[0] if senders else ("", "")

    def bare(field: str) -> tuple[str, ...]:
        return tuple(a for _, a in _addresses(message, field) if a)

    return MailHeaders(
        uid=uid, message_id=_header(message, "message-id"),
        references=_ids(_header(message, "references")),
        in_reply_to=_header(message, "in-reply-to"), subject=_header(message, "subject"),
        from_addr=addr, to=bare("to"), cc=bare("cc"), date=_date(message),
        reply_to=bare("reply-to"), from_name=name)


def _payload(part: Message) -> bytes:
    data = part.get_payload(decode=True)
    return data if isinstance(data, bytes) else b""


def _text_of(part: MIMEPart) -> tuple[str, bool]:
    """(text, too deep) of a text/plain or text/html part."""
    if part.get_content_type() == "text/html":
        from agents.tools.html_text import page_text  # lxml: when an HTML part is read

        page = page_text(_payload(part), part.get_content_charset())
        return page.text, page.too_deep
    try:
        content: Any = part.get_content()
        text = content if isinstance(content, str) else ""
    except (LookupError, ValueError, AssertionError):  # unknown charset, broken encoding
        text = _payload(part).decode("utf-8", errors="replace")
    return clean_text(text).strip(), False


def _body_part(message: EmailMessage) -> MIMEPart | None:
    try:
        part = message.get_body(preferencelist=("plain", "html"))
    except Exception:  # deep (RecursionError) or malformed nesting: fall back to a walk
        part = None
    if part is None:
        for candidate in message.walk():
            if candidate.get_content_type() in ("text/plain", "text/html") \
                    and not candidate.get_filename():
                return candidate
    return part


def _attachments(message: EmailMessage, body: Message | None, cut: bool
                 ) -> tuple[Attachment, ...]:
    leaves = [p for p in message.walk() if not p.is_multipart() and p is not body]
    found = []
    for index, part in enumerate(leaves):
        name = part.get_filename()
        if not name and part.get_content_disposition() != "attachment":
            continue
        size = None if cut and index == len(leaves) - 1 else len(_payload(part))
        found.append(Attachment(one_line(name or "(unnamed)"), part.get_content_type(), size))
    return tuple(found)


def message_text(uid: str, raw: bytes, cut: bool, max_chars: int) -> MessageText:
    """The message as text. `cut`: the download stopped at the size limit before its end."""
    try:
        message = _parse(raw)
    except RecursionError:  # parts nested thousands deep: the headers are still worth showing
        headers = email.parser.BytesParser(policy=policy.default).parsebytes(
            raw, headersonly=True)
        return MessageText(_headers(uid, headers), "", "none", (), None, too_deep=True)
    body_part = _body_part(message)
    text, too_deep, kind = "", False, "none"
    if body_part is not None:
        text, too_deep = _text_of(body_part)
        kind = "html" if body_part.get_content_type() == "text/html" else "text"
    full = len(text)
    return MessageText(_headers(uid, message), text[:max_chars], kind,
                       _attachments(message, body_part, cut),
                       full if full > max_chars else None, too_deep)
