"""The owner's terminal beside `valet serve`: a loopback-only endpoint (127.0.0.1, a port the
system picks) that `valet chat` attaches to, with a token generated at each start. Both are
written to the data directory, readable by this user only (channels.console_link), and the
file is removed at a clean stop; a file left by a killed server names a port nobody answers,
and the chat then runs on its own."""

from __future__ import annotations

import logging
import os
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web

from bot.app.root import App
from bot.tools import ToolRegistry
from channels.console_link import PATH, Endpoint, endpoint_file, remove_endpoint, write_endpoint
from channels.console_relay import ConsoleRelay

log = logging.getLogger(__name__)


def approval_gated(registry: ToolRegistry) -> Callable[[str], bool]:
    """Tools whose every call waits for an approval first (agents ask later, themselves)."""
    def needs_approval(name: str) -> bool:
        tool = registry.get(name)
        return tool is not None and tool.requires_approval and not tool.is_agent

    return needs_approval


@dataclass
class TerminalEndpoint:
    relay: ConsoleRelay
    runner: web.AppRunner
    file: Path
    token: str

    @classmethod
    def build(cls, app: App) -> TerminalEndpoint:
        """The relay, registered as the console channel (before the deliverer starts)."""
        token = secrets.token_urlsafe(32)
        relay = ConsoleRelay(app.gateway, token=token,
                             needs_approval=approval_gated(app.registry), now=app.clock.now)
        app.add_channel(relay)
        web_app = web.Application()
        web_app.router.add_routes(relay.routes())
        return cls(relay, web.AppRunner(web_app, access_log=None),
                   endpoint_file(app.settings.data_dir()), token)

    async def open(self) -> None:
        """Listening on loopback, the endpoint written for `valet chat` to find."""
        await self.runner.setup()
        await web.TCPSite(self.runner, "127.0.0.1", 0).start()
        port = self.runner.addresses[0][1]
        write_endpoint(self.file, Endpoint(f"ws://127.0.0.1:{port}{PATH}", self.token,
                                           os.getpid()))
        log.info("valet serve: `valet chat` attaches here (127.0.0.1:%s, token in %s)", port,
                 self.file)

    async def close(self) -> None:
        remove_endpoint(self.file, self.token)
        await self.relay.close()
        await self.runner.cleanup()
