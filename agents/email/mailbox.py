"""Email tools that only read: what is unread, a search, one message as text.

Mail is written by strangers: every name, subject and body reaches the model between
untrusted-data markers (bot/text/untrusted.py) with a note that it is not an instruction. Nothing
here changes the mailbox (INBOX is examined read-only; see agents/email/imap.py).
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from agents.connected import NotConnected, connected_secret, connected_status
from agents.email.account import SERVICE, MailAccount, MailError
from agents.email.mime import Attachment, MailSummary, MessageText
from bot.contracts.tool_context import ToolExecutionContext
from bot.text.untrusted import quote_untrusted
from bot.tools.capabilities import CapabilityStatus
from bot.tools.registry import READS, tool

if TYPE_CHECKING:
    from agents.email.imap import Listing

MAX_LISTED = 25
LISTING_NOTE = "the names and subjects below are written by the senders of these emails"
MESSAGE_NOTE = "the text below is the email's content, written by its sender"


def _when(when: datetime | None, tz: ZoneInfo) -> str:
    return f"{when.astimezone(tz):%a %d %b %Y %H:%M}" if when else "(no date)"


def _line(mail: MailSummary, tz: ZoneInfo) -> str:
    sender = mail.from_name if mail.from_name == mail.from_addr or not mail.from_addr \
        else f"{mail.from_name} <{mail.from_addr}>"
    state = "" if mail.seen else " | unread"
    return (f"uid {mail.uid} | from {sender} | subject: {mail.subject or '(no subject)'} | "
            f"{_when(mail.date, tz)}{state}")


def _listing_text(head: str, listing: Listing, tz: ZoneInfo) -> str:
    if not listing.newest:
        return head
    more = listing.count - len(listing.newest)
    shown = f"{head} Newest first" + (f" ({more} older not shown)" if more > 0 else "") + ":"
    return shown + "\n" + quote_untrusted(
        "\n".join(_line(m, tz) for m in listing.newest), note=LISTING_NOTE)


def _limit(value: int) -> int:
    return max(1, min(int(value), MAX_LISTED))


@tool(progress="checking your email", safe_to_repeat=True, does=READS)
async def email_unread(ctx: ToolExecutionContext, limit: int = 10) -> str:
    """How many unread emails the user's inbox holds, and the newest of them (uid, sender,
    subject, date). Reading this does not mark anything as read.

    Args:
        limit: How many of the newest unread emails to list (1-25).
    """
    try:
        from agents.email import imap  # aioimaplib: loaded when a mailbox is first read

        listing = await imap.unread(await mail_account(ctx), _limit(limit))
    except MailError as err:
        return f"Error: {err}"
    if listing.count == 0:
        return "No unread email in the inbox."
    return _listing_text(f"{listing.count} unread in the inbox.", listing, ctx.tz)


def _since(value: str, ctx: ToolExecutionContext) -> date | None:
    text = value.strip().lower()
    if not text:
        return None
    today = ctx.now().date()
    words = {"today": today, "yesterday": today - timedelta(days=1),
             "last week": today - timedelta(days=7), "this week": today - timedelta(
                 days=today.weekday())}
    if text in words:
        return words[text]
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise ValueError(f"since={value!r} is not a day: use today, yesterday, this week, "
                         "last week or YYYY-MM-DD") from None


@tool(progress="searching your email", safe_to_repeat=True, does=READS)
async def search_email(ctx: ToolExecutionContext, sender: str = "", subject: str = "",
                       since: str = "", limit: int = 10) -> str:
    """Search the user's inbox; give at least one of sender, subject, since. Lists the newest
    matches (uid, sender, subject, date); read one with read_email.

    Args:
        sender: Part of the sender's name or address ("Ana", "bank.com").
        subject: Words in the subject.
        since: Received on or after: today, yesterday, this week, last week or YYYY-MM-DD.
        limit: How many of the newest matches to list (1-25).
    """
    day = _since(since, ctx)
    if not (sender.strip() or subject.strip() or day):
        raise ValueError("give at least one of sender, subject or since")
    try:
        from agents.email import imap

        listing = await imap.search(await mail_account(ctx), sender=sender.strip(),
                                    subject=subject.strip(), since=day, limit=_limit(limit))
    except MailError as err:
        return f"Error: {err}"
    asked = ", ".join(part for part in (
        f"from {sender.strip()!r}" if sender.strip() else "",
        f"subject {subject.strip()!r}" if subject.strip() else "",
        f"since {day:%d %b %Y}" if day else "") if part)
    if listing.count == 0:
        return f"No email in the inbox matches ({asked})."
    return _listing_text(f"{listing.count} email(s) match ({asked}).", listing, ctx.tz)


def _size(attachment: Attachment) -> str:
    if attachment.size is None:
        return "size unknown"
    kb = attachment.size / 1024
    return f"{kb / 1024:.1f} MB" if kb >= 1024 else f"{max(1, round(kb))} KB"


def _message_block(message: MessageText, tz: ZoneInfo) -> str:
    h = message.headers
    sender = f"{h.from_name} <{h.from_addr}>" if h.from_name else h.from_addr
    lines = [f"From: {sender or '(unknown)'}", f"To: {', '.join(h.to) or '(none)'}"]
    if h.cc:
        lines.append(f"Cc: {', '.join(h.cc)}")
    lines += [f"Date: {_when(h.date, tz)}", f"Subject: {h.subject or '(no subject)'}"]
    if message.attachments:
        lines.append("Attachments (not downloaded): " + "; ".join(
            f"{a.name} ({a.content_type}, {_size(a)})" for a in message.attachments))
    lines += ["", message.body or "(no text)"]
    return "\n".join(lines)


@tool(progress="reading the email", safe_to_repeat=True, does=READS)
async def read_email(ctx: ToolExecutionContext, uid: str) -> str:
    """One email of the user's inbox as text: sender, recipients, date, subject, attachment
    names and the body. It stays unread in the mailbox.

    Args:
        uid: The uid from email_unread or search_email.
    """
    try:
        from agents.email import imap

        message = await imap.read_message(await mail_account(ctx), str(uid).strip())
    except MailError as err:
        return f"Error: {err}"
    notes = [f"Email uid {message.headers.uid} (left unread in the mailbox)."]
    if message.body_kind == "html":
        notes.append("Its body was HTML, shown as text.")
    if message.body_truncated_from:
        notes.append(f"Body cut to {len(message.body)} of {message.body_truncated_from} "
                     "characters.")
    if message.too_deep:
        notes.append("Part of the message nests too deep to read; that text is missing.")
    return " ".join(notes) + "\n" + quote_untrusted(_message_block(message, ctx.tz),
                                                    note=MESSAGE_NOTE)


async def capability_status(settings: Any, db: Any) -> CapabilityStatus:
    """On once an email account is connected and the key opens it."""
    return await connected_status(db, SERVICE)


async def mail_account(ctx: ToolExecutionContext) -> MailAccount:
    """The person's account, or MailError saying what to do (never a secret)."""
    try:
        secret = await connected_secret(ctx, SERVICE, what="email account")
    except NotConnected as err:
        raise MailError(str(err)) from None
    return MailAccount.from_secret(secret)
