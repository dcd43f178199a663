"""Outbox: messages queued, waiting for a retry (or for quiet hours to end), being sent, and
dead-lettered with the reason; a dead letter can be sent again (the outbox store's retry: the
row back to pending, once; the deliverer is woken)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from aiohttp import web

from bot.app.console.auth import owner_only
from bot.app.console.deps import Console, back
from bot.db import Row
from bot.people.console_login import ConsoleSession

PAGE = "/console/outbox"
LISTED = 100


@dataclass(frozen=True)
class Queued:
    id: int
    user_id: str
    channel: str
    address: str
    text: str
    kind: str
    created_at: datetime
    next_attempt_at: datetime | None
    attempts: int
    error: str


def queued(row: Row) -> Queued:
    payload: dict[str, Any] = json.loads(row["payload"]) if row["payload"] else {}
    kind = str(payload.get("kind", "reply"))
    if kind.startswith("edit:"):
        kind = "edit of a sent message"
    return Queued(int(row["id"]), str(row["user_id"] or ""), row["channel"], row["address"],
                  row["text"], kind, row["created_at"], row["next_attempt_at"],
                  int(row["attempts"]), row["last_error"] or "")


def routes(console: Console) -> list[web.RouteDef]:
    outbox = console.app.outbound.outbox

    async def page(request: web.Request, session: ConsoleSession) -> web.Response:
        now = console.now()
        pending = [queued(r) for r in await outbox.list("pending", LISTED)]
        return console.page(
            request, session, "outbox.html", title="Outbox", people=await console.people(),
            queued=[m for m in pending if m.attempts == 0 and
                    (m.next_attempt_at is None or m.next_attempt_at <= now)],
            waiting=[m for m in pending if m.attempts > 0 or
                     (m.next_attempt_at is not None and m.next_attempt_at > now)],
            sending=[queued(r) for r in await outbox.list("sending", LISTED)],
            dead=[queued(r) for r in await outbox.list("dead", LISTED)])

    async def retry(request: web.Request, session: ConsoleSession) -> web.StreamResponse:
        message_id = int(request.match_info["id"])
        row = await outbox.get(message_id)
        if row is None:
            raise back(PAGE, "No such message.", failed=True)
        target = f"outbox {message_id} ({row['channel']} {row['address']})"
        identity = await console.app.identities.get(row["channel"], row["address"])
        if identity is not None and identity.opted_out_at is not None:
            said = "Not sent again: this address replied STOP (opted out)."
            await console.record(request, session, "retry", target, said)
            raise back(PAGE, said, failed=True)
        if not await outbox.retry_dead(message_id, console.now()):
            said = "Nothing to retry: the message is no longer dead-lettered."
            await console.record(request, session, "retry", target, said)
            raise back(PAGE, said, failed=True)
        console.app.outbound.wake()
        said = f"Message {message_id} queued again for {row['channel']} {row['address']}."
        await console.record(request, session, "retry", target, said)
        raise back(PAGE, said)

    return [web.get(PAGE, owner_only(console, page)),
            web.post(PAGE + "/{id:[0-9]+}/retry", owner_only(console, retry))]
