"""A real SMTP server (aiosmtpd) on loopback for the sending tests: it requires AUTH LOGIN/PLAIN
(over plain text: loopback only), records every message it accepts, and can be told to refuse
(`refuse = "550 ..."`) or to drop the connection in the middle of DATA (`drop_in_data`).

It runs in the test's own event loop (asyncio.start_server), on a port chosen before it
starts, so a test can give the port to the app while the server is still down.
"""

from __future__ import annotations

import asyncio
import warnings
from dataclasses import dataclass, field
from email import message_from_bytes
from email.message import EmailMessage
from email.policy import default
from typing import Any

from aiosmtpd.smtp import SMTP, AuthResult, LoginPassword

from tests.ports import free_port

USER = "me@example.org"
PASSWORD = "s3cret-smtp"


@dataclass(frozen=True)
class Received:
    mail_from: str
    rcpt_tos: tuple[str, ...]
    message: EmailMessage


@dataclass
class Recorder:
    received: list[Received] = field(default_factory=list)
    logins: list[str] = field(default_factory=list)
    refuse: str | None = None  # a reply to DATA instead of "250 OK"
    drop_in_data: bool = False
    user: str = USER
    password: str = PASSWORD

    async def handle_DATA(self, server: SMTP, session: Any, envelope: Any) -> str:
        if self.drop_in_data:  # the message arrived, the answer never leaves
            self.received.append(self._received(envelope))
            assert server.transport is not None
            server.transport.abort()
            return "250 OK"
        if self.refuse:
            return self.refuse
        self.received.append(self._received(envelope))
        return "250 OK"

    @staticmethod
    def _received(envelope: Any) -> Received:
        parsed = message_from_bytes(envelope.original_content or envelope.content,
                                    policy=default)
        assert isinstance(parsed, EmailMessage)
        return Received(envelope.mail_from, tuple(envelope.rcpt_tos), parsed)

    def authenticate(self, server: SMTP, session: Any, envelope: Any, mechanism: str,
                     auth_data: Any) -> AuthResult:
        ok = isinstance(auth_data, LoginPassword) and \
            auth_data.login.decode() == self.user and auth_data.password.decode() == self.password
        if ok:
            self.logins.append(mechanism)
        return AuthResult(success=ok, handled=False)  # False: the server itself answers 535


class SmtpServer:
    def __init__(self, port: int | None = None, *, user: str = USER,
                 password: str = PASSWORD) -> None:
        self.port = port or free_port()
        self.recorder = Recorder(user=user, password=password)
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> SmtpServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @property
    def received(self) -> list[Received]:
        return self.recorder.received

    async def start(self) -> None:
        recorder = self.recorder

        def session() -> SMTP:
            with warnings.catch_warnings():  # AUTH without TLS: on purpose, loopback only
                warnings.simplefilter("ignore")
                return SMTP(recorder, hostname="smtp.test", auth_required=True,
                            auth_require_tls=False, authenticator=recorder.authenticate)

        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(session, "127.0.0.1", self.port)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None

    def secret(self) -> dict[str, str]:
        """What `valet connect email` stores for this server (IMAP unused here)."""
        return {"imap_host": "127.0.0.1", "imap_port": "1", "smtp_host": "127.0.0.1",
                "smtp_port": str(self.port), "username": self.recorder.user,
                "password": self.recorder.password,
                "display_name": "Mia Example"}
