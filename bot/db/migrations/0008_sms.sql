-- SMS: delivery status and cost per outbox row, opted-out and unreachable identities, a
-- provisional timezone guessed from a phone number, and the SMS parts already handed to Twilio.

-- Twilio's status callbacks: delivered | undelivered | failed (+ the error code); sent |
-- queued while nothing final is known. segments/encoding: what the message cost to send.
ALTER TABLE outbox ADD COLUMN delivery_status TEXT;
ALTER TABLE outbox ADD COLUMN delivery_error TEXT;
ALTER TABLE outbox ADD COLUMN delivery_updated_at TIMESTAMPTZ;
ALTER TABLE outbox ADD COLUMN segments INTEGER;
ALTER TABLE outbox ADD COLUMN encoding TEXT;
CREATE INDEX outbox_by_user_channel ON outbox (user_id, channel, created_at);

-- opted_out_at: the person said STOP (or the carrier says they did): nothing is sent until
-- they say START. unreachable_at: a permanent send failure; nothing proactive until they
-- write again.
ALTER TABLE identities ADD COLUMN opted_out_at TIMESTAMPTZ;
ALTER TABLE identities ADD COLUMN unreachable_at TIMESTAMPTZ;

-- Zones a new user's phone number could be in, comma-separated, while the timezone is a
-- guess; NULL once the person has said where they are.
ALTER TABLE users ADD COLUMN timezone_candidates TEXT;
