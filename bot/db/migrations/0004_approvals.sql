-- Structured approvals: one row per risky action waiting for (or decided by) its owner.
-- status: pending -> approved | rejected | expired | superseded (an edit replaced it);
--         approved -> executing -> executed | failed.
CREATE TABLE approvals (
    id TEXT PRIMARY KEY,
    code TEXT NOT NULL,
    user_id TEXT NOT NULL REFERENCES users(id),
    task_id TEXT,
    call_id TEXT NOT NULL,
    tool_name TEXT NOT NULL,
    arguments TEXT NOT NULL,
    args_hash TEXT NOT NULL,
    summary TEXT NOT NULL,
    details TEXT NOT NULL DEFAULT '{}',
    options TEXT NOT NULL,
    allow_modification INTEGER NOT NULL DEFAULT 1,
    status TEXT NOT NULL,
    source TEXT NOT NULL DEFAULT 'chat',
    trigger_task_id TEXT,
    replaces TEXT,
    turn_id TEXT,
    created_at TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL,
    decided_at TIMESTAMPTZ,
    decided_by TEXT,
    executed_at TIMESTAMPTZ,
    result TEXT,
    -- 1 once the outcome has joined the owner's conversation as the call's result.
    reported INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX approvals_by_user ON approvals (user_id, status, created_at);
-- The expiry sweep looks across users.
CREATE INDEX approvals_expiring ON approvals (status, expires_at);
-- The short code a person types on SMS is unique among their pending approvals.
CREATE UNIQUE INDEX approvals_pending_code ON approvals (user_id, code) WHERE status = 'pending';
