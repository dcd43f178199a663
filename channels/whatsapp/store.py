"""What WhatsApp alone keeps, in its own tables (channels/whatsapp/migrations):

- each message Twilio accepted for an outbox row (a text part, a card, a template), so a
  retry after a failure part-way sends only what is missing, and each one's delivery report;
- each person's 24-hour window: when they last wrote (every message they send opens it), and
  when Twilio last said it was closed (error 63016: it knows better than Valet's clock).
"""

from __future__ import annotations

import json
from datetime import date, datetime
from zoneinfo import ZoneInfo

from bot.contracts.envelopes import OutboundMessage, prompts_of, stop_of
from bot.db import Database
from channels.twilio.delivery import DELIVERY_RANK
from channels.whatsapp.traits import NAME

_CURRENT = "COALESCE(delivery_status, '')"  # no report yet ranks lowest


class WhatsAppStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    # --- messages handed to Twilio ------------------------------------------------------

    async def accepted(self, outbox_id: int) -> dict[int, str]:
        """Part number -> Twilio's MessageSid, for the parts already handed over."""
        rows = await self.db.fetch(
            "SELECT part, message_sid FROM whatsapp_parts WHERE outbox_id = $1", outbox_id)
        return {int(r["part"]): str(r["message_sid"]) for r in rows}

    async def record(self, outbox_id: int, part: int, message_sid: str, form: str,
                     at: datetime) -> None:
        """`form`: "text", "card" (quick-reply buttons) or "template"."""
        await self.db.execute(
            "INSERT INTO whatsapp_parts (outbox_id, part, message_sid, form, created_at)"
            " VALUES ($1, $2, $3, $4, $5) ON CONFLICT (outbox_id, part) DO NOTHING",
            outbox_id, part, message_sid, form, at)

    async def record_delivery(self, outbox_id: int, message_sid: str, status: str,
                              error: str | None, at: datetime) -> bool:
        """A delivery report; one never replaces a more final one. False: nothing changed."""
        return await self.db.execute(
            f"UPDATE whatsapp_parts SET delivery_status = $3, delivery_error = $4,"
            f" delivery_updated_at = $5 WHERE outbox_id = $1 AND message_sid = $2"
            f" AND {DELIVERY_RANK.format('$3')}"
            f" > {DELIVERY_RANK.format(_CURRENT)}",
            outbox_id, message_sid, status, error, at) > 0

    async def deliveries(self, outbox_id: int) -> list[tuple[str, str | None]]:
        """(status, error) of each part, in order (None status: no report yet)."""
        rows = await self.db.fetch(
            "SELECT delivery_status, delivery_error FROM whatsapp_parts WHERE outbox_id = $1"
            " ORDER BY part", outbox_id)
        return [(str(r["delivery_status"] or ""), r["delivery_error"]) for r in rows]

    async def message(self, outbox_id: int) -> OutboundMessage | None:
        """The outbox row a report is about, as it was sent (a 63016 sends it again)."""
        row = await self.db.fetchrow(
            "SELECT id, user_id, channel, address, text, payload, dedupe_key FROM outbox"
            " WHERE id = $1", outbox_id)
        if row is None or row["channel"] != NAME:
            return None
        payload = json.loads(row["payload"]) if row["payload"] else {}
        return OutboundMessage(int(row["id"]), row["user_id"], NAME, row["address"],
                               row["text"], prompts_of(payload), stop_of(payload),
                               kind=payload.get("kind", "reply"),
                               dedupe_key=row["dedupe_key"] or "")

    # --- the 24-hour window -------------------------------------------------------------

    async def wrote(self, address: str, at: datetime) -> None:
        """The person wrote: their window opens for 24 hours from `at`."""
        await self.db.execute(
            "INSERT INTO whatsapp_windows (address, last_inbound_at) VALUES ($1, $2)"
            " ON CONFLICT (address) DO UPDATE SET last_inbound_at = excluded.last_inbound_at"
            " WHERE whatsapp_windows.last_inbound_at IS NULL"
            " OR whatsapp_windows.last_inbound_at < excluded.last_inbound_at", address, at)

    async def closed(self, address: str, at: datetime) -> None:
        """Twilio refused a free-form message there (63016): closed until they write."""
        await self.db.execute(
            "INSERT INTO whatsapp_windows (address, closed_at) VALUES ($1, $2)"
            " ON CONFLICT (address) DO UPDATE SET closed_at = excluded.closed_at",
            address, at)

    async def window(self, address: str) -> tuple[datetime | None, datetime | None]:
        """(when they last wrote, when Twilio last said the window was closed)."""
        row = await self.db.fetchrow(
            "SELECT last_inbound_at, closed_at FROM whatsapp_windows WHERE address = $1",
            address)
        return (row["last_inbound_at"], row["closed_at"]) if row else (None, None)

    # --- what it cost -------------------------------------------------------------------

    async def messages_total(self) -> int:
        """Every message handed to Twilio, ever (a counter for /metrics)."""
        return int(await self.db.fetchval("SELECT COUNT(*) FROM whatsapp_parts") or 0)

    async def messages_since(self, user_id: str, since: datetime) -> int:
        return int(await self.db.fetchval(
            "SELECT COUNT(*) FROM whatsapp_parts p JOIN outbox o ON o.id = p.outbox_id"
            " WHERE o.user_id = $1 AND p.created_at >= $2", user_id, since) or 0)

    async def daily_messages(self, start: datetime, end: datetime, timezone: str
                             ) -> dict[tuple[str, date], int]:
        rows = await self.db.fetch(
            "SELECT o.user_id, p.created_at FROM whatsapp_parts p"
            " JOIN outbox o ON o.id = p.outbox_id"
            " WHERE p.created_at >= $1 AND p.created_at < $2", start, end)
        zone = ZoneInfo(timezone)
        totals: dict[tuple[str, date], int] = {}
        for row in rows:
            key = (str(row["user_id"] or ""), row["created_at"].astimezone(zone).date())
            totals[key] = totals.get(key, 0) + 1
        return totals
