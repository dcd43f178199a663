-- The rest of a long message: an SMS is held to sms.max_segments, and what did not fit waits
-- here, one per number (the latest cut message's), until the person asks for it ("MORE") or
-- sends anything else (channels/sms/store.py).
CREATE TABLE sms_rest (
    address TEXT PRIMARY KEY,
    outbox_id BIGINT NOT NULL,
    text TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL
);
