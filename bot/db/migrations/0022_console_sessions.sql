-- The owner's web console (/console): one-time login links sent to the owner's own chat,
-- the sessions they open, and every action taken there (who, when, what, how it went).
-- Links and sessions are stored as SHA-256 hashes: reading the table logs nobody in.
CREATE TABLE console_links (
    token_hash TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users(id),
    created_at TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL,
    used_at TIMESTAMPTZ
);

CREATE TABLE console_sessions (
    token_hash TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users(id),
    csrf TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL,
    remote TEXT NOT NULL DEFAULT ''
);

CREATE TABLE console_actions (
    id {autoid},
    at TIMESTAMPTZ NOT NULL,
    user_id TEXT NOT NULL,
    session TEXT NOT NULL,
    action TEXT NOT NULL,
    target TEXT NOT NULL DEFAULT '',
    outcome TEXT NOT NULL DEFAULT '',
    remote TEXT NOT NULL DEFAULT ''
);
CREATE INDEX console_actions_by_time ON console_actions (at);
