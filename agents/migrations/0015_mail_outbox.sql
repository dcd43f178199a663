-- Email sending (issue 17): every approved mail, keyed by its approval id. The message is
-- composed once and its bytes stored here; every attempt sends these bytes, never a message
-- composed again. A second insert of the same approval id changes nothing.
--   status: queued (waiting for its next attempt) -> sending (an attempt holds the lease)
--           -> sent | failed (refused for good) | unknown (the attempt died after the message
--           went out: it may have been accepted, so it is never sent again on its own)
--   owed: 1 while the person is owed word of its outcome: cleared when the approved tool's own
--         answer said it (sent or refused at once), or once the deliverer has told them
CREATE TABLE mail_outbox (
    approval_id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL,
    sender TEXT NOT NULL,
    recipients TEXT NOT NULL,
    subject TEXT NOT NULL,
    message {blob} NOT NULL,
    status TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TIMESTAMPTZ,
    lease_until TIMESTAMPTZ,
    last_error TEXT,
    owed INTEGER NOT NULL DEFAULT 1,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX mail_outbox_due ON mail_outbox (status, next_attempt_at);
