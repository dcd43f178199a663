-- What became of an approved action, typed (bot/approvals/model.py): besides executed and
-- failed, `refused` (its tool declined: nothing was done), `unknown` (its process died while
-- it may have acted) and `interrupted` (its process died before it started). Requests settled
-- before this release said so only in their result text; they are given their status here.
UPDATE approvals SET status = 'unknown'
    WHERE status = 'failed' AND result LIKE 'interrupted: the action may not have completed%';
UPDATE approvals SET status = 'interrupted'
    WHERE status = 'failed' AND result LIKE 'interrupted before it started%';
UPDATE approvals SET status = 'refused' WHERE status = 'failed' AND result LIKE 'refused: %';
-- 1 while an executed action's effect waits in a durable record keyed by the approval id (a
-- message to someone in the outbox, a mail in mail_outbox): the approval follows it there and
-- becomes failed or unknown if it did not go (bot/approvals/effects.py).
ALTER TABLE approvals ADD COLUMN effect_pending INTEGER NOT NULL DEFAULT 0;
CREATE INDEX approvals_effects ON approvals (status, effect_pending);
