-- What each turn did, step by step (bot.traces): the last turns of each person, for /debug
-- and `valet turns`. One row per turn, written once when the turn is stored.
CREATE TABLE turn_traces (
    seq {autoid},
    turn_id TEXT NOT NULL UNIQUE,
    user_id TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    stop TEXT NOT NULL,
    body TEXT NOT NULL
);
CREATE INDEX turn_traces_by_user ON turn_traces (user_id, seq);

-- Who wrote an assistant message that asks for tools (a provider name, bot.masking): another
-- provider's model reads that round flattened into text. NULL: not recorded.
ALTER TABLE messages ADD COLUMN written_by TEXT;

-- A message that joined its person's running turn (bot.steering) is closed as `steered`, with
-- the id of the turn it joined.
ALTER TABLE inbox ADD COLUMN steered_into TEXT;

-- The running summary of each person's conversation (bot.memory.compaction): what the
-- messages up to `through_seq` said, for the request view to carry instead of them. Each
-- compaction adds a version; the raw messages are never changed.
CREATE TABLE conversation_summaries (
    user_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    through_seq BIGINT NOT NULL,
    text TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (user_id, version)
);
