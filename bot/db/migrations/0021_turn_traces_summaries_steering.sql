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
