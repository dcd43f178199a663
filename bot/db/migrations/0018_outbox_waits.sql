-- How many of a message's tries the channel only answered "wait N seconds" (Telegram's flood
-- control): tries that do not count towards giving up. `attempts` still counts every try, so
-- a message that waits is known to be on its way and later ones to the same chat stay behind
-- it (order).
ALTER TABLE outbox ADD COLUMN waits INTEGER NOT NULL DEFAULT 0;
