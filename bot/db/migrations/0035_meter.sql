-- The meter's ledger (bot/meter): every cost and every message that went out, with its time,
-- so a person's allowance is for the last 24 hours, a window that no change of timezone, name
-- or channel moves; and a door reply of a kind is sent at most once a while (issue 44).
-- daily_spend stays the report by day and month (/usage, `valet budget`, the console).
CREATE TABLE meter_ledger (
    id {autoid},
    user_id TEXT,
    channel TEXT NOT NULL DEFAULT '',
    address TEXT NOT NULL DEFAULT '',
    kind TEXT NOT NULL,
    at TIMESTAMPTZ NOT NULL,
    llm_micros BIGINT NOT NULL DEFAULT 0,
    messages_micros BIGINT NOT NULL DEFAULT 0,
    raised_micros BIGINT NOT NULL DEFAULT 0,
    parts INTEGER NOT NULL DEFAULT 0,
    segments INTEGER NOT NULL DEFAULT 0,
    -- A call the meter refused (kind 'refused'): its worst cost, what the next one needs.
    worst_micros BIGINT NOT NULL DEFAULT 0,
    outbox_id BIGINT UNIQUE
);
CREATE INDEX meter_ledger_user_at ON meter_ledger (user_id, at);
CREATE INDEX meter_ledger_to ON meter_ledger (channel, address, kind, at);
