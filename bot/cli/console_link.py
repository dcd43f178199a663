"""`valet console-link [--send]`: a one-time sign-in link to the web console for the owner,
printed here (the person at the server's shell is its operator) or, with --send, queued for
the owner's own chat (delivered by the running `valet serve`)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable

from bot.config import ConfigError, Settings
from bot.contracts.envelopes import Delivery, Notification, Urgency


def add_console_link_command(sub: argparse._SubParsersAction) -> None:
    link = sub.add_parser("console-link", help="a one-time sign-in link to the web console "
                                               "(owner only; valid 10 minutes, once)")
    link.add_argument("--send", action="store_true",
                      help="send it to the owner's own chat instead of printing it")


async def run_console_link(settings: Settings, args: argparse.Namespace,
                           say: Callable[[str], None] = print) -> int:
    if not settings.console.enabled:
        raise ConfigError("the web console is off: set console.enabled: true in valet.yaml "
                          "(or VALET_CONSOLE_ENABLED=true) and restart valet serve")
    from bot.app import App
    from bot.app.console.command import link_line, login_url
    from bot.cli.admin import _NoLLM
    from bot.people.console_login import ConsoleLogins

    app = await App.build(settings, llm=_NoLLM() if not settings.llm.configured else None)
    try:
        owner = await app.ensure_owner()
        now = app.clock.now()
        url = await login_url(ConsoleLogins(app.db), settings, owner, now)
        stale = _serving_without_console(settings)
        if stale:
            print(f"valet console-link: {stale}", file=sys.stderr)
        if not args.send:
            say(url)
            print("valet: the link works once, for 10 minutes", file=sys.stderr)
            return 0
        # A chat the running server delivers to (the terminal's only `valet chat` reads).
        ids = await app.identities.of_user(owner.id)
        chat = owner.preferred_channel or next(
            (i.channel for i in ids if i.channel != "console" and i.writable), None)
        delivery = await app.outbound.notify(Notification(
            owner.id, link_line(app.persona, url), f"console-link:{url[-12:]}", channel=chat,
            urgency=Urgency.URGENT))
        if delivery is not Delivery.QUEUED:
            say("valet console-link: the owner has no chat to send it to "
                f"({delivery.value}); run it without --send to print the link")
            return 1
        say("valet console-link: sent to the owner's chat (the running valet delivers it)")
        return 0
    finally:
        await app.close()


def _serving_without_console(settings: Settings) -> str | None:
    """What to say when the `valet serve` running here started with the console off: the
    link answers 404 until it restarts (it read console.enabled at start)."""
    from channels.console.link import endpoint_file, read_endpoint

    running = read_endpoint(endpoint_file(settings.data_dir()))
    if running is None or running.console is not False or not _alive(running.pid):
        return None
    return (f"the running valet serve (pid {running.pid}) started with the console off: "
            "restart it (sudo systemctl restart valet) and the link works; until then it "
            "answers 404")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's: it is there
    return True
