"""What SMS alone keeps, in its own tables (channels/sms/migrations):

- the parts of one outbox message that Twilio has accepted: a retry after a failure part-way
  sends only the parts still missing (Twilio has no idempotency key to lean on);
- each message's delivery report and what it cost (segments, encoding), for the person's
  monthly cost and for an operator asking what became of a message;
- the rest of a long message held to sms.max_segments, until the person asks for it.
"""

from __future__ import annotations

from datetime import date, datetime
from zoneinfo import ZoneInfo

from bot.db import Database
from channels.twilio.delivery import DELIVERY_RANK


class SmsStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    # --- parts handed to Twilio ------------------------------------------------------------

    async def accepted(self, outbox_id: int) -> dict[int, str]:
        """Part number -> Twilio's MessageSid, for the parts already handed over."""
        rows = await self.db.fetch(
            "SELECT part, message_sid FROM sms_parts WHERE outbox_id = $1", outbox_id)
        return {int(r["part"]): str(r["message_sid"]) for r in rows}

    async def record(self, outbox_id: int, part: int, message_sid: str, segments: int,
                     encoding: str, at: datetime) -> None:
        await self.db.execute(
            "INSERT INTO sms_parts (outbox_id, part, message_sid, segments, encoding,"
            " created_at) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (outbox_id, part)"
            " DO NOTHING", outbox_id, part, message_sid, segments, encoding, at)

    # --- the rest of a long message ---------------------------------------------------------

    async def keep_rest(self, address: str, outbox_id: int, text: str, at: datetime) -> None:
        """What did not fit in the message just sent: the number's only rest from now on."""
        await self.db.execute(
            "INSERT INTO sms_rest (address, outbox_id, text, created_at) VALUES ($1, $2, $3, $4)"
            " ON CONFLICT (address) DO UPDATE SET outbox_id = excluded.outbox_id,"
            " text = excluded.text, created_at = excluded.created_at",
            address, outbox_id, text, at)

    async def take_rest(self, address: str) -> str | None:
        """The rest, taken (once: a second "MORE" finds nothing)."""
        return await self.db.fetchval(
            "DELETE FROM sms_rest WHERE address = $1 RETURNING text", address)

    async def drop_rest(self, address: str) -> None:
        """The person asked something new: what was left of the last answer is dropped."""
        await self.db.execute("DELETE FROM sms_rest WHERE address = $1", address)

    # --- after sending: what Twilio reports back, and what it cost --------------------------

    async def record_delivery(self, outbox_id: int, status: str, error: str | None,
                              at: datetime) -> bool:
        """A delivery report (Twilio's status callback). Reports arrive out of order and a
        long message has several parts: a report never replaces a more final one, and a
        failure of any part stands. False when nothing changed."""
        return await self.db.execute(
            f"INSERT INTO sms_messages (outbox_id, delivery_status, delivery_error,"
            f" delivery_updated_at) VALUES ($1, $2, $3, $4) ON CONFLICT (outbox_id) DO UPDATE"
            f" SET delivery_status = excluded.delivery_status,"
            f" delivery_error = excluded.delivery_error,"
            f" delivery_updated_at = excluded.delivery_updated_at"
            f" WHERE {DELIVERY_RANK.format('excluded.delivery_status')}"
            f" > {DELIVERY_RANK.format('sms_messages.delivery_status')}",
            outbox_id, status, error, at) > 0

    async def add_cost(self, outbox_id: int, segments: int, encoding: str) -> None:
        """One part of the message was handed to Twilio: count its segments."""
        await self.db.execute(
            "INSERT INTO sms_messages (outbox_id, segments, encoding) VALUES ($1, $2, $3)"
            " ON CONFLICT (outbox_id) DO UPDATE SET"
            " segments = sms_messages.segments + excluded.segments, encoding = CASE"
            " WHEN sms_messages.encoding IS NULL OR sms_messages.encoding = excluded.encoding"
            " THEN excluded.encoding ELSE 'mixed' END", outbox_id, segments, encoding)

    async def segments_total(self) -> int:
        """Every segment handed to Twilio, ever (a counter for /metrics)."""
        return int(await self.db.fetchval(
            "SELECT COALESCE(SUM(segments), 0) FROM sms_parts") or 0)

    async def segments_since(self, user_id: str, since: datetime) -> int:
        """Segments sent to the user by SMS since then (their messages queued since)."""
        return int(await self.db.fetchval(
            "SELECT COALESCE(SUM(s.segments), 0) FROM sms_messages s"
            " JOIN outbox o ON o.id = s.outbox_id"
            " WHERE o.user_id = $1 AND o.channel = 'sms' AND o.created_at >= $2",
            user_id, since) or 0)

    async def daily_segments(self, start: datetime, end: datetime, timezone: str
                             ) -> dict[tuple[str, date], int]:
        """Segments handed to Twilio between `start` and `end`, by person and by day in
        `timezone` (when each part was handed over)."""
        rows = await self.db.fetch(
            "SELECT o.user_id, p.created_at, p.segments FROM sms_parts p"
            " JOIN outbox o ON o.id = p.outbox_id"
            " WHERE p.created_at >= $1 AND p.created_at < $2", start, end)
        zone = ZoneInfo(timezone)
        totals: dict[tuple[str, date], int] = {}
        for row in rows:
            key = (str(row["user_id"] or ""), row["created_at"].astimezone(zone).date())
            totals[key] = totals.get(key, 0) + int(row["segments"])
        return totals
