-- Users (people) and their conversation history.

CREATE TABLE users (
    id TEXT PRIMARY KEY,
    display_name TEXT NOT NULL DEFAULT '',
    timezone TEXT NOT NULL DEFAULT 'UTC',
    preferred_channel TEXT,
    quiet_hours_start TEXT,
    quiet_hours_end TEXT,
    is_owner INTEGER NOT NULL DEFAULT 0,
    blocked INTEGER NOT NULL DEFAULT 0,
    created_at TIMESTAMPTZ NOT NULL
);

-- The raw history: never rewritten, only appended. One conversation per user.
CREATE TABLE messages (
    seq {autoid},
    user_id TEXT NOT NULL REFERENCES users(id),
    turn_id TEXT NOT NULL,
    role TEXT NOT NULL,
    content TEXT,
    tool_calls TEXT,
    tool_call_id TEXT,
    channel TEXT NOT NULL DEFAULT '',
    created_at TIMESTAMPTZ NOT NULL
);

CREATE INDEX messages_by_user ON messages (user_id, seq);
