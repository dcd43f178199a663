"""Reading the person's INBOX over IMAP (aioimaplib), read-only.

Each call opens its own connection: TLS (or plain on a loopback test server, see
`MailAccount.imap_tls`), LOGIN, EXAMINE INBOX (read-only: the server cannot set \\Seen), the
commands, LOGOUT always. Bodies are fetched with BODY.PEEK and only up to a size limit, so
reading never marks mail as read and never downloads a large attachment. Every command has a
timeout and the whole session another. What the server sends is parsed in the offload worker
(`agents.email.mime`, `bot.plumbing.offload`): mail is written by strangers.

Errors are `MailError`s with text safe to show the person (never the password).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import ssl
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import date
from typing import Any, TypeVar

from aioimaplib import aioimaplib

from agents.email.account import MailAccount, MailError
from agents.email.mime import (
    HEADER_FIELDS,
    SUMMARY_FIELDS,
    MailHeaders,
    MailSummary,
    MessageText,
    headers_of,
    message_text,
    summaries_of,
)
from bot.plumbing.offload import WorkFailed, WorkTimeout, run_bounded

T = TypeVar("T")

COMMAND_TIMEOUT = 20.0  # one IMAP command (aioimaplib's per-command limit)
SESSION_TIMEOUT = 60.0  # connect, log in, read, log out
PARSE_TIMEOUT = 10.0  # the worker's limit for parsing what was fetched
MAX_MESSAGE_BYTES = 2_000_000  # a message is downloaded up to this; the rest is left
MAX_HEADER_BYTES = 16_384  # per message in a listing
MAX_BODY_CHARS = 20_000  # text of one message given to the model

_FETCH_START = re.compile(rb"^\d+ FETCH \(")
_UID = re.compile(rb"\bUID (\d+)")
_FLAGS = re.compile(rb"\bFLAGS \(([^)]*)\)")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


@dataclass(frozen=True)
class Fetched:
    """One message of a FETCH answer: its UID, flags and the literal asked for."""

    uid: str
    flags: tuple[str, ...]
    data: bytes

    @property
    def seen(self) -> bool:
        return "\\seen" in (f.lower() for f in self.flags)


@dataclass(frozen=True)
class Listing:
    """How many matched, and the newest of them (newest first)."""

    count: int
    newest: tuple[MailSummary, ...]


def quoted(text: str) -> str:
    """An IMAP quoted string (search terms, the login name); CR, LF and NUL are refused."""
    if any(c in text for c in "\r\n\0"):
        raise MailError("line breaks are not allowed in a mail search or login")
    return aioimaplib.quoted(text)


def imap_date(day: date) -> str:
    """A date as IMAP SEARCH wants it (30-Mar-2026), whatever the locale."""
    return f"{day.day}-{_MONTHS[day.month - 1]}-{day.year}"


class Inbox:
    """A logged-in session with INBOX examined (read-only)."""

    def __init__(self, client: aioimaplib.IMAP4) -> None:
        self._client = client

    async def search(self, *criteria: str) -> list[str]:
        """UIDs matching, oldest first (UIDs grow as mail arrives)."""
        response = await self._client.uid_search(*criteria, charset="UTF-8")
        _check(response, "search the mailbox")
        found: list[int] = []
        for line in response.lines[:-1]:
            if isinstance(line, bytes) and re.fullmatch(rb"[\d ]*", line):
                found.extend(int(n) for n in line.split())
        return [str(n) for n in sorted(set(found))]

    async def fetch(self, uids: list[str], item: str) -> list[Fetched]:
        """`item` (a BODY.PEEK[...] section) of each message, with UID and FLAGS."""
        if not uids:
            return []
        response = await self._client.uid("fetch", ",".join(uids), f"(UID FLAGS {item})")
        _check(response, "read the mailbox")
        return _fetched(response.lines)


def _check(response: aioimaplib.Response, doing: str) -> None:
    if response.result != "OK":
        said = b" ".join(line for line in response.lines if isinstance(line, bytes))
        raise MailError(f"the mail server would not {doing}: "
                        f"{said.decode('utf-8', 'replace')[:200] or response.result}")


def _fetched(lines: list[bytes | bytearray]) -> list[Fetched]:
    """Group a FETCH answer's lines by message: metadata lines (bytes) and literals
    (bytearray, as aioimaplib hands them)."""
    groups: list[tuple[list[bytes], list[bytes]]] = []
    for line in lines:
        if isinstance(line, bytearray):
            if groups:
                groups[-1][1].append(bytes(line))
        elif _FETCH_START.match(line):
            groups.append(([line], []))
        elif groups:
            groups[-1][0].append(line)
    found = []
    for meta_lines, literals in groups:
        meta = b" ".join(meta_lines)
        uid, flags = _UID.search(meta), _FLAGS.search(meta)
        if uid is None:
            continue
        found.append(Fetched(uid.group(1).decode(),
                             tuple(flags.group(1).decode("ascii", "replace").split())
                             if flags else (), b"".join(literals)))
    return found


async def _open(account: MailAccount) -> aioimaplib.IMAP4:
    try:
        if account.imap_tls:
            client: aioimaplib.IMAP4 = aioimaplib.IMAP4_SSL(
                account.imap_host, account.imap_port, timeout=COMMAND_TIMEOUT,
                ssl_context=ssl.create_default_context())
        else:
            client = aioimaplib.IMAP4(account.imap_host, account.imap_port,
                                      timeout=COMMAND_TIMEOUT)
        await client.wait_hello_from_server()
    except (OSError, TimeoutError, aioimaplib.AioImapException) as err:
        raise MailError(f"could not reach the mail server {account.imap_host}:"
                        f"{account.imap_port} ({_reason(err)})") from None
    return client


async def _login(client: aioimaplib.IMAP4, account: MailAccount) -> None:
    response = await client.login(quoted(account.username), account.password)
    if response.result != "OK":
        said = b" ".join(line for line in response.lines if isinstance(line, bytes))
        raise MailError(f"the mail server {account.imap_host} refused the login for "
                        f"{account.username} ({said.decode('utf-8', 'replace')[:200]}): check "
                        "the username and password (`valet connect email`)")


async def _logout(client: aioimaplib.IMAP4) -> None:
    with contextlib.suppress(Exception):  # the session is over either way
        async with asyncio.timeout(5):
            await client.logout()
    transport = getattr(client.protocol, "transport", None)
    if transport is not None:
        transport.close()


def _reason(err: BaseException) -> str:
    if isinstance(err, TimeoutError | aioimaplib.CommandTimeout):
        return "timed out"
    return str(err) or type(err).__name__


@contextlib.asynccontextmanager
async def session(account: MailAccount, *, examine: bool = True) -> AsyncIterator[Inbox]:
    """A logged-in session (INBOX examined read-only unless `examine` is False); LOGOUT at
    the end, whatever happened."""
    try:
        async with asyncio.timeout(SESSION_TIMEOUT):
            client = await _open(account)
            try:
                await _login(client, account)
                if examine:
                    response = await client.examine("INBOX")
                    _check(response, "open the inbox")
                    # aioimaplib moves to SELECTED only on SELECT; EXAMINE selects too (read-only)
                    client.protocol.state = aioimaplib.SELECTED
                yield Inbox(client)
            finally:
                await _logout(client)
    except (TimeoutError, aioimaplib.AioImapException, OSError) as err:
        raise MailError(f"the mail server {account.imap_host} stopped answering "
                        f"({_reason(err)})") from None


async def check_login(account: MailAccount) -> None:
    """Connect and log in (the one IMAP login check: `valet connect email`, `valet doctor`)."""
    async with session(account, examine=False):
        pass


async def _in_worker(fn: Callable[..., T], *args: Any) -> T:
    try:
        return await run_bounded(fn, *args, timeout=PARSE_TIMEOUT)
    except (WorkTimeout, WorkFailed) as err:
        raise MailError(f"the message could not be read ({err})") from None


async def _listing(inbox: Inbox, uids: list[str], newest: int) -> Listing:
    chosen = list(reversed(uids[-newest:])) if newest > 0 else []
    fields = " ".join(SUMMARY_FIELDS)
    fetched = await inbox.fetch(chosen,
                                f"BODY.PEEK[HEADER.FIELDS ({fields})]<0.{MAX_HEADER_BYTES}>")
    by_uid = {f.uid: f for f in fetched}
    items = [(uid, by_uid[uid].data, by_uid[uid].seen) for uid in chosen if uid in by_uid]
    summaries = await _in_worker(summaries_of, items)
    return Listing(len(uids), tuple(summaries))


async def unread(account: MailAccount, newest: int = 10) -> Listing:
    """How many unread messages the INBOX holds, and the newest `newest` of them."""
    async with session(account) as inbox:
        return await _listing(inbox, await inbox.search("UNSEEN"), newest)


async def search(account: MailAccount, *, sender: str = "", subject: str = "",
                 since: date | None = None, limit: int = 10) -> Listing:
    """Messages from `sender` (name or address, any part), with `subject` in the subject,
    received on or after `since`: how many, and the newest `limit`."""
    criteria: list[str] = []
    if sender:
        criteria += ["FROM", quoted(sender)]
    if subject:
        criteria += ["SUBJECT", quoted(subject)]
    if since is not None:
        criteria += ["SINCE", imap_date(since)]
    async with session(account) as inbox:
        return await _listing(inbox, await inbox.search(*(criteria or ["ALL"])), limit)


async def _one(inbox: Inbox, uid: str, item: str) -> Fetched:
    if not uid.isdigit():
        raise MailError(f"{uid!r} is not a message id: use the uid from email_unread or "
                        "search_email")
    fetched = await inbox.fetch([uid], item)
    if not fetched:
        raise MailError(f"there is no message {uid} in the inbox (it may have been moved or "
                        "deleted)")
    return fetched[0]


async def read_message(account: MailAccount, uid: str,
                       max_chars: int = MAX_BODY_CHARS) -> MessageText:
    """One message as text (not marked as read), attachments listed, not downloaded."""
    async with session(account) as inbox:
        found = await _one(inbox, uid, f"RFC822.SIZE BODY.PEEK[]<0.{MAX_MESSAGE_BYTES}>")
    cut = len(found.data) >= MAX_MESSAGE_BYTES
    return await _in_worker(message_text, uid, found.data, cut, max_chars)


async def message_headers(account: MailAccount, uid: str) -> MailHeaders:
    """The headers a reply needs (Message-ID, References, ...), not marking it read."""
    fields = " ".join(HEADER_FIELDS)
    async with session(account) as inbox:
        found = await _one(inbox, uid,
                           f"BODY.PEEK[HEADER.FIELDS ({fields})]<0.{MAX_HEADER_BYTES * 4}>")
    return await _in_worker(headers_of, uid, found.data)
