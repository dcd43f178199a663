-- The gateway's entry by user: a turn no channel message started (a trigger's run) waits in
-- the inbox like any message, in its user's order, and its reply is routed as a notification.
ALTER TABLE inbox ADD COLUMN trigger_task_id TEXT;
ALTER TABLE inbox ADD COLUMN reply_channel TEXT;
ALTER TABLE inbox ADD COLUMN urgency TEXT NOT NULL DEFAULT 'normal';

-- (Identities that cannot be written to, opted_out_at / unreachable_at, come with 0008.)
