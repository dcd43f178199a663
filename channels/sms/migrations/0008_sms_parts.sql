-- Part of migration 0008 (with bot.db's 0008_sms.sql): the SMS channel's own table.

-- One row per SMS handed to Twilio for an outbox message (a long reply is several): a retry
-- after a failure part-way sends only the parts not yet accepted.
CREATE TABLE sms_parts (
    outbox_id BIGINT NOT NULL,
    part INTEGER NOT NULL,
    message_sid TEXT NOT NULL,
    segments INTEGER NOT NULL,
    encoding TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (outbox_id, part)
);
