"""The statements one message costs, counted on a real App (bot.db.counting): shared by the
statement-budget test and `make bench`.

A plain turn is a known person's "hello" answered without a tool. Its statements are those
issued on the message's own path: `Gateway.receive_row` (inbox, access), the person's drain
(`Gateway._drain`: claim, the turn, the reply queued and the row closed) and any task the turn
started (issued under its turn id, bot.plumbing.logs). Delivery (the
outbox deliverer's claim and mark-sent) is counted apart, and background loops (sweepers,
the trigger engine's heartbeat) not at all: they do not run per message.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import UTC, datetime

from bot.app import App
from bot.app.database import open_database
from bot.channel import ChannelSender
from bot.config import load_settings
from bot.config.policies import AccessSettings, ChannelAccess
from bot.contracts.channels import ChannelTraits
from bot.contracts.envelopes import IncomingMessage, OutboundMessage
from bot.db.counting import CountingDatabase, Statement
from bot.llm.port import LLMResponse, TokenUsage

TURN = ("Gateway.receive_row", "Gateway._drain")


class InstantLLM:
    model = "instant"

    async def complete(self, messages, tools, *, on_text=None):  # type: ignore[no-untyped-def]
        return LLMResponse("hello to you", [], TokenUsage(10, 3), "stop")

    async def list_models(self) -> list[str]:
        return ["instant"]

    async def close(self) -> None:
        return None


class Recorder(ChannelSender):
    traits = ChannelTraits("bench", "Bench")

    def __init__(self) -> None:
        self.sent: list[OutboundMessage] = []
        self.arrived = asyncio.Event()

    async def send(self, message: OutboundMessage) -> str:
        self.sent.append(message)
        self.arrived.set()
        return f"m{len(self.sent)}"


@dataclass(frozen=True)
class TurnCount:
    turn: list[Statement]  # receive -> reply queued, row closed
    delivery: list[Statement]  # the reply's claim and mark-sent (and the deliverer's scans)
    first_contact: list[Statement]  # the same turn for a person Valet has never seen


async def count_plain_turn(url: str) -> TurnCount:
    settings = load_settings(None, env={"VALET_DATABASE_URL": url, "VALET_CONFIG": "/dev/null"})
    settings = settings.model_copy(update={"access": AccessSettings(channels={
        "bench": ChannelAccess(policy="allowlist", allow=["ana", "ben"])})})
    db = CountingDatabase(await open_database(url))
    app = await App.build(settings, llm=InstantLLM(), db=db)
    recorder = Recorder()
    app.add_channel(recorder)
    await app.start()
    try:
        first = await _one(app, db, recorder, "ana", 1)
        await _one(app, db, recorder, "ana", 2)  # the steady state from here on
        await _one(app, db, recorder, "ana", 3)
        plain = await _one(app, db, recorder, "ana", 4)
        return TurnCount(turn=[s for s in plain if _on_the_path(s)],
                         delivery=[s for s in plain if _delivering(s)],
                         first_contact=[s for s in first if _on_the_path(s)])
    finally:
        await app.close()


def _on_the_path(statement: Statement) -> bool:
    return statement.turn_id is not None or any(statement.under(q) for q in TURN)


def _delivering(statement: Statement) -> bool:
    return any("Deliverer" in c for c in statement.chain)


async def _one(app: App, db: CountingDatabase, recorder: Recorder, who: str, n: int
               ) -> list[Statement]:
    db.log.clear()
    recorder.arrived.clear()
    await app.gateway.receive(IncomingMessage(
        channel="bench", address=who, external_id=f"{who}-{n}", text="hello",
        received_at=datetime.now(UTC)))
    await asyncio.wait_for(recorder.arrived.wait(), 30)
    await app.gateway.wait_idle()  # its own statements run under neither path
    return list(db.log.statements)
