-- Long-term memory (bot/memory): facts per person, keyed by user id, so a person's linked
-- identities share one memory and nothing crosses people. A replaced or forgotten fact is
-- closed (valid_to set), never deleted: its history explains itself.

CREATE TABLE memory_facts (
    id {autoid},
    user_id TEXT NOT NULL REFERENCES users(id),
    text TEXT NOT NULL,
    kind TEXT NOT NULL,                -- fact | preference | person | event
    source_turn TEXT,                  -- the turn it was learnt from ("tool:remember"...)
    created_at TIMESTAMPTZ NOT NULL,
    valid_from TIMESTAMPTZ NOT NULL,
    valid_to TIMESTAMPTZ,              -- NULL: still true
    closed_reason TEXT,                -- replaced | forgotten
    replaced_by BIGINT
);

CREATE INDEX memory_facts_open ON memory_facts (user_id, valid_to, id);

-- sqlite only: keyword search over the open facts (rows kept in step by the store; rowid is
-- memory_facts.id). `owner` holds one token derived from the user id, so a search walks only
-- that person's entries (the fact's own user_id is still checked on every hit).
CREATE VIRTUAL TABLE memory_facts_fts USING fts5(text, owner, tokenize = 'porter unicode61 remove_diacritics 2');

-- postgres only: the words of each fact, kept by Postgres itself, plus one lexeme for its
-- owner so a search walks only that person's entries (user_id is still checked on every hit)
ALTER TABLE memory_facts ADD COLUMN words tsvector GENERATED ALWAYS AS (to_tsvector('simple', 'owner' || md5(user_id)) || to_tsvector('english', text)) STORED;

-- postgres only: full-text search over the open facts
CREATE INDEX memory_facts_search ON memory_facts USING GIN (words) WHERE valid_to IS NULL;

-- A fact's vector for similarity search (float32, unit length), apart from the facts so a
-- keyword search's heap stays small.
CREATE TABLE memory_embeddings (
    fact_id BIGINT PRIMARY KEY REFERENCES memory_facts(id),
    user_id TEXT NOT NULL,
    model TEXT NOT NULL,
    vector {blob} NOT NULL
);

CREATE INDEX memory_embeddings_by_user ON memory_embeddings (user_id, model);

-- Bumped with every change to a person's facts: a cached vector index checks it per recall.
CREATE TABLE memory_versions (
    user_id TEXT PRIMARY KEY,
    version BIGINT NOT NULL
);

-- Turns waiting for extraction (durable: a failed or interrupted one is retried later).
CREATE TABLE memory_extractions (
    turn_id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL,
    said TEXT NOT NULL,                -- the person's own words of the turn
    answer TEXT NOT NULL,              -- the assistant's reply: context, never a source
    created_at TIMESTAMPTZ NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TIMESTAMPTZ NOT NULL,
    last_error TEXT
);

CREATE INDEX memory_extractions_due ON memory_extractions (next_attempt_at);
