"""Sending mail: a new message or a reply, each only with the person's approval (the registry
says `approval: always`; the tool also refuses to run outside an approved execution).

Addresses are checked when the call's arguments are (bot.tools.registry: pydantic validators),
so a bad one gets a corrective error before anything is asked. The approval card says From, To,
Cc, Subject and the body: the summary (the one line every channel shows, SMS included, cut at
300 characters there) has the addresses, the subject and the body's first lines with its length;
the details (Telegram, the console) have the whole body.

The approved call composes the message once and hands it to the mail outbox under the
approval id (agents.email.delivery): a retry or a second decision sends nothing more.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator

from agents.email.account import MailAccount, MailError
from agents.email.effects import MailEffects
from agents.email.mailbox import mail_account
from agents.email.message import (
    Draft,
    HeadersLookup,
    OriginalMessage,
    checked_addresses,
    one_line,
    reply_headers,
    split_addresses,
)
from agents.email.outbox import MailStatus, OutgoingMail
from agents.services import services_of
from bot.contracts.tool_context import ToolExecutionContext
from bot.tools.registry import SENDS, ToolOutcome, ToolStatus, tool
from persona.catalog import say

PREVIEW_CHARS = 100  # of the body, on the card's one line
QUEUED = ("Queued: the mail server did not answer; it will go out as soon as it does "
          "(you'll be told).")


# The original's headers by IMAP uid (agents.email.imap.message_headers); a test or a
# deployment may hand another through the services (`mail_headers`).
def _recipients(values: list[str]) -> list[str]:
    checked = checked_addresses(values)
    if not checked:
        raise ValueError("give at least one address")
    return checked


def _subject(value: str) -> str:
    return one_line(value)


def _body(value: str) -> str:
    if not value.strip():
        raise ValueError("the message is empty: write what the email should say")
    return value


Recipients = Annotated[list[str], BeforeValidator(split_addresses), AfterValidator(_recipients)]
CopyTo = Annotated[list[str], BeforeValidator(split_addresses), AfterValidator(checked_addresses)]
Subject = Annotated[str, AfterValidator(_subject)]
Body = Annotated[str, AfterValidator(_body)]


# --- the tools ----------------------------------------------------------------------------------

async def _describe_send(args: dict[str, Any], ctx: ToolExecutionContext) -> str:
    account = await mail_account(ctx)
    return card("card_email_send", list(args["to"]), list(args.get("cc") or ()),
                str(args["subject"]), str(args["body"]), sender=_from(account))


async def _describe_reply(args: dict[str, Any], ctx: ToolExecutionContext) -> str:
    account = await mail_account(ctx)
    reply = reply_headers(await _lookup(ctx)(account, int(args["uid"])), account.address,
                          reply_all=bool(args.get("reply_all")))
    return card("card_email_reply", list(reply.to), list(reply.cc), reply.subject,
                str(args["body"]), sender=_from(account))


async def _connected(ctx: ToolExecutionContext) -> MailAccount:
    try:
        return await mail_account(ctx)
    except MailError as err:
        raise ValueError(f"{err}. Nothing was sent and the user was not asked.") from None


async def check_send(args: dict[str, Any], ctx: ToolExecutionContext) -> dict[str, Any]:
    """Before asking: a mail account is connected (the addresses are checked already)."""
    await _connected(ctx)
    return args


async def check_reply(args: dict[str, Any], ctx: ToolExecutionContext) -> dict[str, Any]:
    """Before asking: a mail account is connected, and the message exists and has someone to
    reply to."""
    account = await _connected(ctx)
    try:
        reply = reply_headers(await _lookup(ctx)(account, int(args["uid"])), account.address,
                              reply_all=bool(args.get("reply_all")))
    except MailError as err:
        raise ValueError(f"{err}. The user was not asked.") from None
    if not reply.to:
        raise ValueError("that message has no one to reply to. The user was not asked.")
    return args


@tool(progress="sending the email", describe=_describe_send, prepare=check_send,
      effect=MailEffects.key, does=SENDS)
async def send_mail(ctx: ToolExecutionContext, to: Recipients, subject: Subject, body: Body,
                    cc: CopyTo | None = None) -> ToolOutcome:
    """Send a new email from the user's account (the user approves it first).

    Args:
        to: Recipient addresses (name@example.com or "Name <name@example.com>").
        subject: The subject line.
        body: The message, plain text.
        cc: Addresses to copy.
    """
    try:
        account = await mail_account(ctx)
        draft = Draft(tuple(to), subject, body, tuple(cc or ()))
        return await _send(ctx, account, draft)
    except MailError as err:
        return _failed(ctx, f"Error: {err}")


@tool(progress="sending the reply", describe=_describe_reply, prepare=check_reply,
      effect=MailEffects.key, does=SENDS)
async def reply_to_mail(ctx: ToolExecutionContext, uid: int, body: Body,
                        reply_all: bool = False) -> ToolOutcome:
    """Reply to an email in the user's inbox, in its thread (the user approves it first).

    Args:
        uid: The message's uid, as listed.
        body: The reply, plain text (without the quoted original).
        reply_all: Also to everyone the original was sent or copied to.
    """
    try:
        account = await mail_account(ctx)
        reply = reply_headers(await _lookup(ctx)(account, uid), account.address,
                              reply_all=reply_all)
        if not reply.to:
            return ToolOutcome.refused("Refused: that message has no one to reply to; "
                                       "nothing was sent.")
        draft = Draft(reply.to, reply.subject, body, reply.cc, reply.in_reply_to,
                      reply.references)
        return await _send(ctx, account, draft)
    except MailError as err:
        return _failed(ctx, f"Error: {err}")


async def _send(ctx: ToolExecutionContext, account: MailAccount,
                draft: Draft) -> ToolOutcome:
    delivery = services_of(ctx).mail
    # Defence in depth: a deployment registry that dropped `approval: always` must not send
    # mail unasked (nor key two mails by a reused model call id).
    if not ctx.approved:
        raise MailError("an email goes out only once the user has approved it")
    mail = await delivery.submit(approval_id=ctx.call_id, user_id=ctx.user_id,
                                 account=account, draft=draft)
    return said(ctx, mail)


def said(ctx: ToolExecutionContext, mail: OutgoingMail) -> ToolOutcome:
    """The tool's answer for the stored mail's state. Queued: done for now; the approval
    follows the row and says so if it does not go (agents.email.effects)."""
    to = ", ".join(mail.recipients)
    if mail.status is MailStatus.SENT:
        return ToolOutcome.done(f"Sent to {to} (subject “{mail.subject}”).")
    if mail.status in (MailStatus.QUEUED, MailStatus.SENDING):
        return ToolOutcome.done(QUEUED + (f" ({mail.last_error})" if mail.last_error else ""))
    if mail.status is MailStatus.FAILED:
        return _failed(ctx, f"Not sent: {mail.last_error or 'the mail server refused it'}.")
    return ToolOutcome(ctx.call_id, "", ToolStatus.UNKNOWN,
                       f"Outcome unknown: {mail.last_error}. It may or may not have been sent: "
                       "the user should check their Sent folder before sending it again.")


def _failed(ctx: ToolExecutionContext, content: str) -> ToolOutcome:
    return ToolOutcome(ctx.call_id, "", ToolStatus.FAILED, content)


def _lookup(ctx: ToolExecutionContext) -> HeadersLookup:
    given = services_of(ctx).mail_headers
    if given is not None:
        return given

    async def over_imap(account: MailAccount, uid: int) -> OriginalMessage:
        from agents.email import imap  # aioimaplib: loaded when a mailbox is first read

        return await imap.message_headers(account, str(uid))

    return over_imap


def _from(account: MailAccount) -> str:
    return f"{account.display_name} <{account.address}>" if account.display_name \
        else account.address


# --- the approval card --------------------------------------------------------------------------

def preview(body: str, limit: int = PREVIEW_CHARS) -> str:
    """The body's first lines on one line; cut, with the whole length, when longer."""
    flat = " / ".join(line.strip() for line in body.strip().splitlines() if line.strip())
    if len(flat) <= limit:
        return f"“{flat}”"
    return f"“{flat[:limit].rstrip()}…” ({len(body.strip())} characters)"


def card(line: str, to: list[str], cc: list[str], subject: str, body: str, *,
         sender: str = "") -> str:
    """The card of an email about to go (`line`: card_email_send or card_email_reply), in
    its reader's language."""
    who = say("card_email_from", sender=sender) if sender else ""
    copies = say("card_email_copies", cc=", ".join(cc)) if cc else ""
    return say(line, subject=one_line(subject), to=", ".join(to), copies=copies, sender=who,
               body=preview(body))


def _summarize_send(args: dict[str, Any]) -> str:
    return card("card_email_send", list(args.get("to") or ()), list(args.get("cc") or ()),
                str(args.get("subject", "")), str(args.get("body", "")))


def _summarize_reply(args: dict[str, Any]) -> str:
    line = "card_email_reply_all_to" if args.get("reply_all") else "card_email_reply_to"
    return say(line, uid=args.get("uid"), body=preview(str(args.get("body", ""))))


send_mail.__valet_tool__.summarize = _summarize_send
reply_to_mail.__valet_tool__.summarize = _summarize_reply
