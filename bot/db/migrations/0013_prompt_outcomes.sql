-- A message that carried approval prompts is edited to show their outcome once every one of
-- them is settled (on channels that can edit: Telegram); 1 once that edit is queued.
ALTER TABLE outbox ADD COLUMN prompts_settled INTEGER NOT NULL DEFAULT 0;
