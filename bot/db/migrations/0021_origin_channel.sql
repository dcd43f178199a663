-- The channel a task was set on ("remind me at 3" by SMS): where its messages go when the
-- person has not chosen a preferred channel. A channel named on the task, and the person's
-- own choice, come first. Carried by each run's inbox row for the reply's routing.
ALTER TABLE inbox ADD COLUMN origin_channel TEXT;
