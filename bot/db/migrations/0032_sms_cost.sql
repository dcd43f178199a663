-- What strangers and people may cost (issue 35).
--
-- A sender Valet does not let in gets at most one reply per window (sms.stranger_reply_hours):
-- when it last got one, per channel and address (bot/people/strangers.py).
CREATE TABLE stranger_replies (
    channel TEXT NOT NULL,
    address TEXT NOT NULL,
    replied_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (channel, address)
);

-- All strangers of a channel together: replies in the hour that started at window_start
-- (sms.stranger_replies_per_hour), taken one by one with a compare-and-set.
CREATE TABLE stranger_windows (
    channel TEXT PRIMARY KEY,
    window_start TIMESTAMPTZ NOT NULL,
    replies INTEGER NOT NULL DEFAULT 0
);

-- When the owner was last told about something that is told at most once a while (new
-- pairing requests: pairing.notice_minutes); a compare-and-set on it decides who tells.
CREATE TABLE owner_notices (
    kind TEXT PRIMARY KEY,
    last_at TIMESTAMPTZ NOT NULL
);

-- Which pairing requests the owner was told of (the requests before this were, one each).
ALTER TABLE pairing_requests ADD COLUMN noticed_at TIMESTAMPTZ;
UPDATE pairing_requests SET noticed_at = created_at;

-- What each person cost a day (their own timezone's day, YYYY-MM-DD), in millionths of a US
-- dollar: LLM tokens at llm.prices, SMS segments at sms.price_per_segment, and what the owner
-- added to that day's allowance (`valet budget raise`, the console). bot/spend.py.
CREATE TABLE daily_spend (
    user_id TEXT NOT NULL,
    day TEXT NOT NULL,
    llm_micros BIGINT NOT NULL DEFAULT 0,
    sms_micros BIGINT NOT NULL DEFAULT 0,
    raised_micros BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (user_id, day)
);

-- A person over today's allowance: their messages wait as 'held' until a new day or a raise
-- (bot/gateway/budget.py); the workers look for them with this index.
CREATE INDEX inbox_held ON inbox (user_id) WHERE status = 'held';
