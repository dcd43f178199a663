"""Mail as data: addresses checked before anything is asked, a reply's threading headers, and
the RFC 5322 message composed once from what the person approved.

Pure functions (no I/O): the tools and the outbox build on them, and tests call them directly.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from email.errors import HeaderParseError
from email.headerregistry import Address
from email.message import EmailMessage
from email.policy import SMTP
from email.utils import format_datetime, parseaddr
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from agents.email.account import MailAccount

MAX_REFERENCES = 20  # a long thread's References keep its root and its latest ids
_REPLY_PREFIX = re.compile(r"^\s*(re|aw|sv)\s*:\s*", re.IGNORECASE)


class OriginalMessage(Protocol):
    """What a reply needs of the message it answers (agents.email.imap.MailHeaders)."""

    @property
    def message_id(self) -> str: ...
    @property
    def references(self) -> tuple[str, ...]: ...
    @property
    def in_reply_to(self) -> str: ...
    @property
    def subject(self) -> str: ...
    @property
    def from_addr(self) -> str: ...
    @property
    def to(self) -> tuple[str, ...]: ...
    @property
    def cc(self) -> tuple[str, ...]: ...
    @property
    def reply_to(self) -> tuple[str, ...]: ...


# --- addresses ----------------------------------------------------------------------------

def parse_address(text: str) -> Address:
    """One recipient ("ana@example.com" or "Ana Lima <ana@example.com>"), or ValueError
    saying what is wrong in words the model can act on."""
    name, spec = parseaddr(text.strip())
    problem = f"{text.strip()!r} is not an email address (write name@example.com)"
    if not spec or spec.count("@") != 1 or any(c.isspace() for c in spec) \
            or any(c in text for c in "\r\n\0"):
        raise ValueError(problem)
    try:
        address = Address(display_name=name, addr_spec=spec)
    except (ValueError, IndexError, HeaderParseError):
        raise ValueError(problem) from None
    domain = address.domain
    if not address.username or "." not in domain.strip(".") or domain.startswith(".") \
            or ".." in domain:
        raise ValueError(problem)
    return address


def split_addresses(value: object) -> object:
    """The model may give "a@x.org, Bob <b@y.org>" as one string: a list, as the schema asks
    (split at commas and semicolons outside quotes). Anything else goes on unchanged."""
    if isinstance(value, str):
        return [p.strip() for p in re.split(r"[,;](?=(?:[^\"]*\"[^\"]*\")*[^\"]*$)", value)
                if p.strip()]
    return value


def checked_addresses(values: Sequence[str]) -> list[str]:
    """Each address checked and written the one way (duplicates dropped, order kept)."""
    seen: set[str] = set()
    out: list[str] = []
    for value in values:
        address = parse_address(value)
        if address.addr_spec.lower() not in seen:
            seen.add(address.addr_spec.lower())
            out.append(_shown(address))
    return out


def _shown(address: Address) -> str:
    return str(address) if address.display_name else address.addr_spec


def addr_spec(text: str) -> str:
    return parseaddr(text)[1].lower()


def one_line(text: str) -> str:
    """A header value: one line (a newline would start a header of its own)."""
    return " ".join(text.split())


# --- replies --------------------------------------------------------------------------------

@dataclass(frozen=True)
class ReplyHeaders:
    to: tuple[str, ...]
    cc: tuple[str, ...]
    subject: str
    in_reply_to: str  # "" when the original has no Message-ID
    references: tuple[str, ...]


def reply_subject(subject: str) -> str:
    """"Re: " once, however many the thread already has."""
    stripped = subject.strip()
    while _REPLY_PREFIX.match(stripped):
        stripped = _REPLY_PREFIX.sub("", stripped, count=1)
    return f"Re: {stripped}"


def _msg_id(value: str) -> str:
    value = value.strip()
    if not value:
        return ""
    return value if value.startswith("<") else f"<{value.strip('<>')}>"


def reply_headers(original: OriginalMessage, own_address: str, *,
                  reply_all: bool = False) -> ReplyHeaders:
    """RFC 5322 3.6.4: In-Reply-To is the original's Message-ID; References are its
    References (or its In-Reply-To) followed by its Message-ID. A reply goes to the sender;
    to all: also everyone it was sent to, except the person themselves."""
    me = own_address.lower()
    message_id = _msg_id(original.message_id)
    parents = [_msg_id(r) for r in original.references if r.strip()] or \
        ([_msg_id(original.in_reply_to)] if original.in_reply_to.strip() else [])
    chain = _unique([*parents, message_id] if message_id else parents)
    if len(chain) > MAX_REFERENCES:
        chain = [chain[0], *chain[-(MAX_REFERENCES - 1):]]
    sender_is_me = addr_spec(original.from_addr) == me
    # The sender's Reply-To, when they set one, is where they asked answers to go.
    to = list(original.to) if sender_is_me else list(original.reply_to or (original.from_addr,))
    cc = [*original.to, *original.cc] if reply_all and not sender_is_me else \
        (list(original.cc) if reply_all else [])
    to_kept = _without(to, {me})
    cc_kept = _without(cc, {me} | {addr_spec(a) for a in to_kept})
    return ReplyHeaders(tuple(to_kept), tuple(cc_kept), reply_subject(original.subject),
                        message_id, tuple(chain))


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(i for i in items if i))


def _without(addresses: Iterable[str], skip: set[str]) -> list[str]:
    kept: dict[str, str] = {}
    for address in addresses:
        key = addr_spec(address)
        if key and key not in skip and key not in kept:
            kept[key] = address
    return list(kept.values())


# --- the message ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Draft:
    """What the person approved, before it becomes bytes."""

    to: tuple[str, ...]
    subject: str
    body: str
    cc: tuple[str, ...] = ()
    in_reply_to: str = ""
    references: tuple[str, ...] = ()

    @property
    def recipients(self) -> list[str]:
        """The SMTP envelope: every To and Cc address once."""
        return _unique(addr_spec(a) for a in (*self.to, *self.cc))


def message_id(approval_id: str, sender: str) -> str:
    """The approval id is the Message-ID's seed: the same approval is the same message."""
    domain = addr_spec(sender).rpartition("@")[2] or "valet.invalid"
    return f"<valet.{approval_id}@{domain}>"


def compose(draft: Draft, *, approval_id: str, sender: str, display_name: str,
            at: datetime) -> EmailMessage:
    """The full message, once: From with the display name, Date, a Message-ID derived from
    the approval id, the thread's headers when it is a reply; plain text in UTF-8."""
    message = EmailMessage(policy=SMTP)
    message["From"] = Address(display_name=display_name, addr_spec=addr_spec(sender)) \
        if display_name else addr_spec(sender)
    message["To"] = ", ".join(draft.to)
    if draft.cc:
        message["Cc"] = ", ".join(draft.cc)
    message["Subject"] = one_line(draft.subject)
    message["Date"] = format_datetime(at)
    message["Message-ID"] = message_id(approval_id, sender)
    if draft.in_reply_to:
        message["In-Reply-To"] = draft.in_reply_to
    if draft.references:
        message["References"] = " ".join(draft.references)
    message.set_content(draft.body if draft.body.endswith("\n") else draft.body + "\n")
    return message


# How a reply finds the original message's headers (by mailbox uid): over IMAP, or another
# lookup a deployment hands over in the tool services.
HeadersLookup = Callable[["MailAccount", int], Awaitable[OriginalMessage]]
