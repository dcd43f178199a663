-- What each turn cost: the LLM's prompt and completion tokens and how many requests the turn's
-- loop made, one row per turn (keyed by the turn: a turn redone after a crash is not counted
-- twice). The owner's console adds them up by person and day (bot/usage.py).
CREATE TABLE turn_usage (
    turn_id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL,
    channel TEXT NOT NULL DEFAULT '',
    at TIMESTAMPTZ NOT NULL,
    prompt_tokens BIGINT NOT NULL DEFAULT 0,
    completion_tokens BIGINT NOT NULL DEFAULT 0,
    llm_requests INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX turn_usage_by_time ON turn_usage (at);
