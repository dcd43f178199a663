"""A Valet process for crash stories: every stdin line reaches the gateway at once as a
console message from the owner (not waiting for the reply before reading the next, as a
person typing on Telegram would), every reply is printed as it is sent, and at the end of the
input it waits for the work in hand, then exits. The test kills it -9 whenever it likes.

    python -m tests.e2e.gateway_process   (settings from the environment, as `valet`)
"""

from __future__ import annotations

import asyncio
import itertools
import os
import sys
import time
from datetime import UTC, datetime

from bot.app import App
from bot.channel import ChannelSender
from bot.contracts.envelopes import IncomingMessage, OutboundMessage
from channels.console.traits import TRAITS as CONSOLE
from channels.registry import load_channel_settings


class PrintingSender(ChannelSender):
    traits = CONSOLE

    async def send(self, message: OutboundMessage) -> str:
        print(message.text, flush=True)
        return str(time.monotonic_ns())


async def main() -> None:
    app = await App.build(load_channel_settings())
    app.add_channel(PrintingSender())  # type: ignore[arg-type]
    await app.start()
    session = f"{os.getpid()}-{time.time_ns()}"
    ids = itertools.count(1)
    try:
        while line := await asyncio.to_thread(sys.stdin.readline):
            await app.gateway.receive(IncomingMessage(
                channel="console", address="local", text=line.strip(),
                external_id=f"line-{session}-{next(ids)}", received_at=datetime.now(UTC)))
        await app.gateway.wait_idle()
    finally:
        await app.close()


if __name__ == "__main__":
    asyncio.run(main())
