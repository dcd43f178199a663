"""The SMS webhooks served by a process of their own, as `valet serve` will (tests that kill
it): settings from the environment, prints its port, runs until killed."""

from __future__ import annotations

import asyncio
import sys

from aiohttp import web

from bot.app import App
from bot.config import load_settings
from channels.sms import build_sms_channel


async def serve() -> None:
    app = await App.build(load_settings())
    channel = await build_sms_channel(app)
    await app.start()
    runner = web.AppRunner(channel.web_app(), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    print(site._server.sockets[0].getsockname()[1], flush=True)  # type: ignore[union-attr]
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()
        await channel.stop()
        await app.close()


if __name__ == "__main__":
    sys.exit(asyncio.run(serve()))
