"""`valet connect email`: each field is checked as it is typed (an empty or malformed server
name, a port that is not one, an IMAP server nobody answers on, an empty user name) and asked
again; after a few refusals nothing is stored and the login is never tried."""

from __future__ import annotations

import argparse
import asyncio

from bot.cli.connect import Prompts, connect_email
from tests.ports import free_port


def typing(*typed: str, password: str = "pw") -> tuple[Prompts, list[str]]:
    queue, asked = list(typed), []

    def ask(prompt: str) -> str:
        asked.append(prompt)
        return queue.pop(0)

    return Prompts(ask=ask, secret=lambda prompt: password), asked


async def test_each_field_is_checked_as_it_is_entered(capsys):
    server = await asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    nobody = free_port()
    prompts, asked = typing(
        "", "imaps://mail.example.com", "127.0.0.1", "99999", str(nobody),  # IMAP, try 1
        "127.0.0.1", str(port),  # IMAP, try 2: something answers there
        "smtp example com", "127.0.0.1", "",  # SMTP (not reached now), its default port
        "", "alice", "not-an-address", "alice@example.org")
    async with server:
        secret = await connect_email(argparse.Namespace(), prompts, None)  # type: ignore[arg-type]
    out = capsys.readouterr().out
    assert secret is None  # not an IMAP server: the login at the end fails, nothing stored
    assert "  a server name is needed (e.g. imap.example.com)" in out
    assert "  just the server's name, without the scheme (e.g. imap.example.com)" in out
    assert "  '99999' is not a port (a number such as 993)" in out
    assert f"  nothing answers at 127.0.0.1:{nobody} (" in out
    assert "  'smtp example com' is not a server name (e.g. imap.example.com)" in out
    assert "  a user name (often your email address) is needed" in out
    assert "  'not-an-address' is not an email address (name@example.com)" in out
    assert "valet: could not connect the email account" in out
    assert asked.count("Username: ") == 2 and "SMTP port [465]: " in asked


async def test_three_refusals_stop_before_the_password(capsys):
    prompts, asked = typing("", "", "")
    secret = await connect_email(argparse.Namespace(), prompts, None)  # type: ignore[arg-type]
    assert secret is None
    assert capsys.readouterr().out.splitlines()[-1] == (
        "valet: IMAP server: no usable answer after 3 tries; nothing was stored")
    assert asked == ["IMAP server (host): "] * 3
