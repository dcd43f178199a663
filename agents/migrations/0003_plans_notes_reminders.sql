-- Part of migration 0003 (with bot.db's 0003_agent_pool.sql): the agents' tables, each
-- user's plan, notes and reminders.

-- The plan the LLM keeps for a long request (update_plan): JSON list of {step, status}.
CREATE TABLE plans (
    user_id TEXT PRIMARY KEY REFERENCES users(id),
    steps TEXT NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);

CREATE TABLE notes (
    id {autoid},
    user_id TEXT NOT NULL REFERENCES users(id),
    title TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX notes_by_user ON notes (user_id, id);

-- Reminders the reminder agent drafted. Nothing sends them yet: the trigger engine picks up
-- status 'pending' (ready to schedule); 'draft' rows wait for the user's go-ahead.
CREATE TABLE reminders (
    id {autoid},
    user_id TEXT NOT NULL REFERENCES users(id),
    text TEXT NOT NULL,
    due_at TIMESTAMPTZ NOT NULL,
    timezone TEXT NOT NULL,
    status TEXT NOT NULL,
    source_text TEXT NOT NULL DEFAULT '',
    created_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX reminders_by_status ON reminders (status, due_at);
CREATE INDEX reminders_by_user ON reminders (user_id, due_at);
