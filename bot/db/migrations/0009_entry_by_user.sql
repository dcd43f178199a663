-- The gateway's entry by user: a turn no channel message started (a trigger's run) waits in
-- the inbox like any message, in its user's order, and its reply is routed as a notification.
ALTER TABLE inbox ADD COLUMN trigger_task_id TEXT;
ALTER TABLE inbox ADD COLUMN reply_channel TEXT;
ALTER TABLE inbox ADD COLUMN urgency TEXT NOT NULL DEFAULT 'normal';

-- Where a person can no longer be reached: opted out (SMS STOP) or unreachable (a permanent
-- send failure: blocked the bot, number gone). Proactive messages skip such identities until
-- the person writes from them again.
ALTER TABLE identities ADD COLUMN opted_out_at TIMESTAMPTZ;
ALTER TABLE identities ADD COLUMN unreachable_at TIMESTAMPTZ;
