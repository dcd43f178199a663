-- Agents: the pool of tasks waiting for a person, each user's plan, notes and reminders.

-- A task (an agent missing a field or waiting for a yes, an ask_user question) that paused a
-- turn. fields/state are JSON. schema_version is the agent's InputFields hash when it paused.
-- asked_seq orders a user's questions (the latest first; the tasks of one turn share it and
-- keep their order by position): clocks can tie, a per-user counter cannot.
CREATE TABLE agent_pool (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users(id),
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    label TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL,
    question TEXT NOT NULL,
    call_id TEXT NOT NULL DEFAULT '',
    schema_version TEXT NOT NULL DEFAULT '',
    fields TEXT NOT NULL DEFAULT '{}',
    state TEXT NOT NULL DEFAULT '{}',
    asked_seq INTEGER NOT NULL DEFAULT 0,
    position INTEGER NOT NULL DEFAULT 0,
    turn_id TEXT NOT NULL DEFAULT '',
    created_at TIMESTAMPTZ NOT NULL,
    asked_at TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX agent_pool_by_user ON agent_pool (user_id, asked_seq);
CREATE INDEX agent_pool_by_expiry ON agent_pool (expires_at);

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
