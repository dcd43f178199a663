-- The durable message path: identities, inbox, outbox, pairing and link codes.

-- A (channel, address) pair such as ('telegram', '123456') or ('sms', '+15551234567').
CREATE TABLE identities (
    channel TEXT NOT NULL,
    address TEXT NOT NULL,
    user_id TEXT NOT NULL REFERENCES users(id),
    display_name TEXT NOT NULL DEFAULT '',
    created_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (channel, address)
);
CREATE INDEX identities_by_user ON identities (user_id);

-- Every inbound message, persisted before the channel is acknowledged. The unique key stops
-- retried webhooks and re-delivered updates. status: received | processing | done | rejected
-- | failed.
CREATE TABLE inbox (
    id {autoid},
    channel TEXT NOT NULL,
    external_id TEXT NOT NULL,
    address TEXT NOT NULL,
    user_id TEXT,
    text TEXT NOT NULL DEFAULT '',
    button_approval_id TEXT,
    button_option TEXT,
    display_name TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    received_at TIMESTAMPTZ NOT NULL,
    processed_at TIMESTAMPTZ,
    error TEXT,
    UNIQUE (channel, external_id)
);
CREATE INDEX inbox_by_user_status ON inbox (user_id, status, id);

-- Every reply and proactive message, persisted before sending. dedupe_key makes a second
-- enqueue of the same reply a no-op. status: pending | sending | sent | dead.
CREATE TABLE outbox (
    id {autoid},
    dedupe_key TEXT NOT NULL UNIQUE,
    user_id TEXT,
    channel TEXT NOT NULL,
    address TEXT NOT NULL,
    text TEXT NOT NULL,
    payload TEXT,
    status TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TIMESTAMPTZ NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    claimed_at TIMESTAMPTZ,
    sent_at TIMESTAMPTZ,
    channel_message_id TEXT,
    last_error TEXT
);
CREATE INDEX outbox_due ON outbox (status, next_attempt_at);
CREATE INDEX outbox_by_address ON outbox (channel, address, id);

-- Unknown senders asking to be let in; the owner approves or denies by code.
-- status: pending | approved | denied | expired.
CREATE TABLE pairing_requests (
    code TEXT PRIMARY KEY,
    channel TEXT NOT NULL,
    address TEXT NOT NULL,
    display_name TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL,
    decided_at TIMESTAMPTZ,
    user_id TEXT
);
CREATE INDEX pairing_by_address ON pairing_requests (channel, address, status);

-- One-time codes that join another channel's identity to an existing user (/link).
CREATE TABLE link_codes (
    code TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users(id),
    created_at TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL,
    used_at TIMESTAMPTZ
);

-- A turn re-run after a crash finds out whether it was already written.
CREATE INDEX messages_by_turn ON messages (turn_id);
