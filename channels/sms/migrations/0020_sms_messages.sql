-- What SMS alone keeps about an outbox message, in the SMS channel's own table: Twilio's
-- delivery report (delivered | undelivered | failed + the error code; sent | queued while
-- nothing final is known) and what it cost (segments, and the encoding: GSM-7, UCS-2, or
-- mixed when its parts differ). Until now these were outbox columns (0008); they move here.
CREATE TABLE sms_messages (
    outbox_id BIGINT PRIMARY KEY,
    segments INTEGER NOT NULL DEFAULT 0,
    encoding TEXT,
    delivery_status TEXT,
    delivery_error TEXT,
    delivery_updated_at TIMESTAMPTZ
);

INSERT INTO sms_messages (outbox_id, segments, encoding, delivery_status, delivery_error,
                          delivery_updated_at)
SELECT id, COALESCE(segments, 0), encoding, delivery_status, delivery_error,
       delivery_updated_at
FROM outbox WHERE segments IS NOT NULL OR delivery_status IS NOT NULL;

ALTER TABLE outbox DROP COLUMN delivery_status;
ALTER TABLE outbox DROP COLUMN delivery_error;
ALTER TABLE outbox DROP COLUMN delivery_updated_at;
ALTER TABLE outbox DROP COLUMN segments;
ALTER TABLE outbox DROP COLUMN encoding;
