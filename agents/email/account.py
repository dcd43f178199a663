"""A person's mail account, as stored by `valet connect email` (bot.credentials, service
"email"): the IMAP and SMTP servers, the login, and the address mail is sent from.

Shared by reading (IMAP) and sending (SMTP). Nothing here logs or renders the password;
MailError messages are safe to show to the person.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

SERVICE = "email"
LOOPBACK = ("localhost", "127.0.0.1", "::1")


class MailError(Exception):
    """The mailbox could not be read or mail could not be sent; safe to show (no secret)."""


@dataclass(frozen=True)
class MailAccount:
    imap_host: str
    imap_port: int
    smtp_host: str
    smtp_port: int
    username: str
    password: str
    address: str  # the From address (defaults to the username when it is an address)
    display_name: str = ""

    @classmethod
    def from_secret(cls, secret: Mapping[str, str]) -> MailAccount:
        missing = [k for k in ("imap_host", "smtp_host", "username", "password")
                   if not secret.get(k)]
        if missing:
            raise MailError("the stored email connection is incomplete (no "
                            f"{', '.join(missing)}): run `valet connect email` again")
        try:
            imap_port = int(secret.get("imap_port") or 993)
            smtp_port = int(secret.get("smtp_port") or 465)
        except ValueError:
            raise MailError("the stored email connection has a port that is not a number: "
                            "run `valet connect email` again") from None
        username = secret["username"]
        address = secret.get("address") or (username if "@" in username else "")
        if not address:
            raise MailError("the stored email connection has no sending address: run "
                            "`valet connect email` again")
        return cls(secret["imap_host"], imap_port, secret["smtp_host"], smtp_port, username,
                   secret["password"], address, secret.get("display_name", ""))

    @property
    def imap_tls(self) -> bool:
        """Implicit TLS, except a plain port on loopback (a local or test server)."""
        return not (self.imap_host in LOOPBACK and self.imap_port != 993)

    @property
    def smtp_tls(self) -> str:
        """'implicit' (465), 'starttls' (587 and others), or 'none' (a plain port on
        loopback: a local relay or a test server)."""
        if self.smtp_port == 465:
            return "implicit"
        if self.smtp_host in LOOPBACK and self.smtp_port not in (587,):
            return "none"
        return "starttls"


