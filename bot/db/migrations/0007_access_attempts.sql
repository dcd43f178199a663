-- Guesses at codes a stranger can try (/link), counted per sender and kind in a window: a few
-- tries, then silence. Durable, so a restart does not hand out a fresh allowance.
CREATE TABLE access_attempts (
    channel TEXT NOT NULL,
    address TEXT NOT NULL,
    kind TEXT NOT NULL,
    window_start TIMESTAMPTZ NOT NULL,
    attempts INTEGER NOT NULL,
    PRIMARY KEY (channel, address, kind)
);

-- Pairing requests are capped per channel: the count and the oldest pending one of a channel.
CREATE INDEX pairing_by_channel_status ON pairing_requests (channel, status, created_at);
