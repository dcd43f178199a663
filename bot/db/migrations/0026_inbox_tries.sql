-- Inbound messages a channel could not store or handle, counted by the channel's own id
-- (a Telegram update id): after a few tries the message is recorded in the inbox as failed,
-- with its reason, and the channel moves on. Counted in the database so a restart continues
-- the count instead of trying forever.
CREATE TABLE inbox_tries (
    channel TEXT NOT NULL,
    external_id TEXT NOT NULL,
    tries INTEGER NOT NULL,
    last_error TEXT,
    updated_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (channel, external_id)
);
