"""The SMS parts of one outbox message that Twilio has accepted: a retry after a failure
part-way sends only the parts still missing (Twilio has no idempotency key to lean on)."""

from __future__ import annotations

from datetime import datetime

from bot.db import Database


class SmsPartStore:
    def __init__(self, db: Database) -> None:
        self.db = db

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
