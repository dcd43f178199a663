"""One delivery attempt over SMTP (aiosmtplib), as a value that says what happened.

    SENT       the server took the message (250 after DATA)
    TRANSIENT  nothing was accepted and trying later may work: no connection, a timeout
               before DATA, a 4xx answer
    PERMANENT  the server refused it for good (5xx: a recipient, the sender, the login)
    UNKNOWN    the connection failed after the message went out and before the server
               answered: it may have been accepted, so it is never sent again blindly

MAIL, RCPT and DATA are sent one by one (not `sendmail`) so the one ambiguous moment, between
the end of DATA and the server's answer, can be told apart from every safe-to-retry failure.
A recipient refused for good fails the whole message before DATA: nobody gets half a send.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

from agents.email.account import MailAccount

if TYPE_CHECKING:
    import aiosmtplib

log = logging.getLogger(__name__)


class SmtpOutcome(Enum):
    SENT = "sent"
    TRANSIENT = "transient"
    PERMANENT = "permanent"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class SmtpResult:
    outcome: SmtpOutcome
    detail: str = ""  # the server's words or what failed; safe to show (no secret)


def _refusal(err: aiosmtplib.SMTPResponseException, what: str) -> SmtpResult:
    kind = SmtpOutcome.TRANSIENT if 400 <= err.code < 500 else SmtpOutcome.PERMANENT
    return SmtpResult(kind, f"{what}: {err.code} {err.message}".strip())


async def deliver(account: MailAccount, sender: str, recipients: Sequence[str],
                  message: bytes, *, timeout: float,
                  tls_context: ssl.SSLContext | None = None) -> SmtpResult:
    """Send `message` (the stored bytes, unchanged) from `sender` to `recipients`, within
    `timeout` seconds in all."""
    mode = account.smtp_tls
    import aiosmtplib  # loaded when a mail is first sent, not at every start

    client = aiosmtplib.SMTP(
        hostname=account.smtp_host, port=account.smtp_port, username=account.username,
        password=account.password, timeout=timeout, use_tls=mode == "implicit",
        start_tls=True if mode == "starttls" else False, tls_context=tls_context)
    in_data = False
    try:
        async with asyncio.timeout(timeout):
            await client.connect()
            try:
                await client.mail(sender)
                for recipient in recipients:
                    try:
                        await client.rcpt(recipient)
                    except aiosmtplib.SMTPRecipientRefused as err:
                        return _refusal(err, f"the server refused {recipient}")
                in_data = True
                await client.data(message)
                in_data = False
            finally:
                if in_data:  # the answer never came: drop the connection
                    client.close()
                else:
                    await _quit(client)
    except aiosmtplib.SMTPAuthenticationError as err:
        return SmtpResult(SmtpOutcome.PERMANENT,
                          f"the mail server refused the login ({err.code}): run "
                          "`valet connect email` again with the right password")
    except aiosmtplib.SMTPResponseException as err:
        # A refused DATA (a 4xx or 5xx answer) is a clear answer: nothing was accepted.
        return _refusal(err, "the mail server refused the message")
    except (TimeoutError, OSError, aiosmtplib.SMTPException) as err:
        if in_data:  # it went out; whether the server kept it, only the server knows
            log.warning("SMTP %s:%s: connection lost during DATA: %s", account.smtp_host,
                        account.smtp_port, type(err).__name__)
            return SmtpResult(SmtpOutcome.UNKNOWN, "the connection to the mail server was "
                              "lost while it was taking the message")
        return SmtpResult(SmtpOutcome.TRANSIENT,
                          f"the mail server {account.smtp_host}:{account.smtp_port} did not "
                          f"answer ({_reason(err)})")
    return SmtpResult(SmtpOutcome.SENT)


def _reason(err: BaseException) -> str:
    """A short cause (aiosmtplib wraps the socket's error in its own)."""
    causes = [err]
    while causes[-1].__cause__ is not None and len(causes) < 5:
        causes.append(causes[-1].__cause__)
    if any(isinstance(c, TimeoutError) for c in causes):
        return "timed out"
    if any(isinstance(c, ConnectionRefusedError) for c in causes) or "Errno 111" in str(err):
        return "connection refused"
    text = str(err).splitlines()[0] if str(err) else type(err).__name__
    return text[:160]


async def _quit(client: aiosmtplib.SMTP) -> None:
    import aiosmtplib

    if not client.is_connected:
        return
    try:
        await client.quit()
    except (aiosmtplib.SMTPException, OSError, TimeoutError):
        client.close()
