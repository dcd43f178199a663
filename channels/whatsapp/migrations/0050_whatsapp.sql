-- What WhatsApp alone keeps (channels/whatsapp/store.py): each message Twilio accepted for an
-- outbox row (a retry sends only what is missing; its delivery report), and each person's
-- 24-hour window: when they last wrote, and when Twilio last said it was closed (63016).
CREATE TABLE whatsapp_parts (
    outbox_id BIGINT NOT NULL,
    part INTEGER NOT NULL,
    message_sid TEXT NOT NULL,
    form TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    delivery_status TEXT,
    delivery_error TEXT,
    delivery_updated_at TIMESTAMPTZ,
    PRIMARY KEY (outbox_id, part)
);
CREATE INDEX whatsapp_parts_by_sid ON whatsapp_parts (message_sid);
CREATE TABLE whatsapp_windows (
    address TEXT PRIMARY KEY,
    last_inbound_at TIMESTAMPTZ,
    closed_at TIMESTAMPTZ
);
