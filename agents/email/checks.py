"""Is a connected mail account usable? IMAP reachable and the login accepted; SMTP reachable
(TLS as the account says) and the login accepted when the server offers AUTH.

Used by `valet doctor` (one line per connected account). Nothing returned carries the
password: server messages are scrubbed of it too, in case a server echoes it.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import aiosmtplib

from agents.email.account import SERVICE, MailAccount, MailError
from agents.email.imap import check_login
from bot.credentials import CredentialsLocked, CredentialStore

SMTP_TIMEOUT = 20.0


@dataclass(frozen=True)
class AccountCheck:
    ok: bool
    text: str


def _scrub(text: str, account: MailAccount) -> str:
    return text.replace(account.password, "***") if account.password else text


async def check_smtp(account: MailAccount) -> str:
    """'login ok', or 'reachable (the server offers no login)'; MailError says what failed."""
    mode = account.smtp_tls
    client = aiosmtplib.SMTP(
        hostname=account.smtp_host, port=account.smtp_port, timeout=SMTP_TIMEOUT,
        use_tls=mode == "implicit", start_tls=mode == "starttls",
        tls_context=ssl.create_default_context() if mode != "none" else None)
    try:
        await client.connect()  # says EHLO itself only when it starts TLS
        if not client.esmtp_extensions:
            await client.ehlo()
        if not client.supports_extension("auth"):
            return "reachable (the server offers no login)"
        await client.login(account.username, account.password)
        return "login ok"
    except aiosmtplib.SMTPAuthenticationError as err:
        raise MailError(f"the server refused the login for {account.username} "
                        f"({err.code} {err.message}): check the username and password"
                        ) from None
    except (aiosmtplib.SMTPException, OSError, TimeoutError) as err:
        raise MailError(f"could not reach it ({str(err) or type(err).__name__})") from None
    finally:
        if client.is_connected:
            try:
                await client.quit()
            except (aiosmtplib.SMTPException, OSError, TimeoutError):
                client.close()


async def check_account(account: MailAccount) -> AccountCheck:
    """Both servers checked; one line for the person."""
    imap_where = f"IMAP {account.imap_host}:{account.imap_port}"
    smtp_where = f"SMTP {account.smtp_host}:{account.smtp_port}"
    parts, ok = [], True
    try:
        await check_login(account)
        parts.append(f"{imap_where} login ok")
    except MailError as err:
        ok = False
        parts.append(f"{imap_where}: {err}")
    try:
        parts.append(f"{smtp_where} {await check_smtp(account)}")
    except MailError as err:
        ok = False
        parts.append(f"{smtp_where}: {err}")
    return AccountCheck(ok, _scrub("; ".join(parts), account))


async def check_connected(db: Any, env: Mapping[str, str]) -> list[AccountCheck]:
    """One check per person with an email account connected (none without the key)."""
    store = CredentialStore.from_env(db, env)
    if not store.has_key:
        return []
    found = []
    for stored in await store.stored(SERVICE):
        who = f"email for {stored.user_id}"
        try:
            secret = await store.get(stored.user_id, SERVICE)
            if secret is None:
                continue
            account = MailAccount.from_secret(secret)
        except (CredentialsLocked, MailError) as err:
            found.append(AccountCheck(False, f"{who}: {err}"))
            continue
        result = await check_account(account)
        found.append(AccountCheck(result.ok, f"{who} ({account.address}): {result.text}"))
    return found
