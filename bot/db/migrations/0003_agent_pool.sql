-- The pool of tasks waiting for a person (the agents' plans, notes and reminders are the
-- other part of this migration: agents/migrations/0003_plans_notes_reminders.sql).

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
