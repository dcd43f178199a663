-- Part of migration 0021 (with bot.db's 0021_origin_channel.sql): the channel a task was
-- set on, where its messages go when the person has not chosen a preferred channel.
ALTER TABLE trigger_tasks ADD COLUMN origin_channel TEXT;
