"""The owner's terminal beside `valet serve`: a loopback-only endpoint (127.0.0.1, a port the
system picks) that `valet chat` attaches to, with a token generated at each start. Both are
written to the data directory, readable by this user only (channels.console.link), and the
file is removed at a clean stop; a file left by a killed server names a port nobody answers,
and the chat then runs on its own.

The same endpoint takes `valet tasks run-now` (POST /run-now, the token as a bearer): the
running server runs the task at once and answers what became of the run (without Redis, the
command would otherwise queue it where the server looks only at its next heartbeat)."""

from __future__ import annotations

import hmac
import logging
import os
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web

from bot.app.root import App
from bot.tools import approval_gated
from channels.console.link import (
    PATH,
    Endpoint,
    endpoint_file,
    read_endpoint,
    remove_endpoint,
    write_endpoint,
)
from channels.console.relay import ConsoleRelay

log = logging.getLogger(__name__)

RUN_NOW_PATH = "/run-now"
RUN_NOW_WAIT = 30.0  # seconds `valet tasks run-now` waits for the server's answer


@dataclass
class TerminalEndpoint:
    relay: ConsoleRelay
    runner: web.AppRunner
    file: Path
    token: str
    console: bool  # this serve answers /console (`valet console-link` reads it)

    @classmethod
    def build(cls, app: App) -> TerminalEndpoint:
        """The relay, registered as the console channel (before the deliverer starts)."""
        token = secrets.token_urlsafe(32)
        relay = ConsoleRelay(app.gateway, token=token,
                             needs_approval=approval_gated(app.registry), now=app.clock.now)
        app.add_channel(relay)
        web_app = web.Application()
        web_app.router.add_routes(relay.routes())
        web_app.router.add_post(RUN_NOW_PATH, _run_now_handler(app, token))
        return cls(relay, web.AppRunner(web_app, access_log=None),
                   endpoint_file(app.settings.data_dir()), token, app.settings.console.enabled)

    async def open(self) -> None:
        """Listening on loopback, the endpoint written for `valet chat` to find."""
        await self.runner.setup()
        await web.TCPSite(self.runner, "127.0.0.1", 0).start()
        port = self.runner.addresses[0][1]
        write_endpoint(self.file, Endpoint(f"ws://127.0.0.1:{port}{PATH}", self.token,
                                           os.getpid(), self.console))
        log.info("valet serve: `valet chat` attaches here (127.0.0.1:%s, token in %s)", port,
                 self.file)

    async def close(self) -> None:
        remove_endpoint(self.file, self.token)
        await self.relay.close()
        await self.runner.cleanup()


def _run_now_handler(app: App, token: str) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def run_now(request: web.Request) -> web.Response:
        given = request.headers.get("Authorization", "").removeprefix("Bearer ")
        if not hmac.compare_digest(given.encode(), token.encode()):
            return web.json_response({"error": "forbidden"}, status=403)
        try:
            task_id = str((await request.json())["task"])
        except (ValueError, KeyError, TypeError):
            return web.json_response({"error": "send {\"task\": ID}"}, status=400)
        outcome = await app.triggers.engine.run_now(task_id)
        return web.json_response({"outcome": outcome.value if outcome else ""})

    return run_now


async def ask_running_server(data_dir: Path, task_id: str) -> str | None:
    """`valet tasks run-now` beside a running `valet serve` (no Redis): the server runs the
    task at once; what became of the run ("" when it already ran this second), or None when
    no server answers here (none runs, or the file is a killed one's)."""
    import aiohttp

    endpoint = read_endpoint(endpoint_file(data_dir))
    if endpoint is None:
        return None
    url = endpoint.url.replace("ws://", "http://", 1).removesuffix(PATH) + RUN_NOW_PATH
    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=RUN_NOW_WAIT)
                                         ) as http, http.post(
                url, json={"task": task_id},
                headers={"Authorization": f"Bearer {endpoint.token}"}) as response:
            if response.status != 200:
                return None
            return str((await response.json()).get("outcome", ""))
    except (aiohttp.ClientError, TimeoutError, ValueError):
        return None
