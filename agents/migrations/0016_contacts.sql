-- Part of migration 0016 (with bot.db's 0016_contacts.sql, the strangers' opt-outs).
-- The address book (agents/contacts): each person's own contacts, keyed by the owner's user
-- id, so nothing crosses people. name_key is the name folded for look-ups (lower case, no
-- accents): one contact per name per person.

CREATE TABLE contacts (
    id {autoid},
    user_id TEXT NOT NULL REFERENCES users(id),
    name TEXT NOT NULL,
    name_key TEXT NOT NULL,
    relationship TEXT NOT NULL DEFAULT '',   -- "sister", "dentist", "boss"
    phone TEXT NOT NULL DEFAULT '',          -- E.164
    email TEXT NOT NULL DEFAULT '',
    telegram TEXT NOT NULL DEFAULT '',       -- a Valet user id or a @username
    notes TEXT NOT NULL DEFAULT '',
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    UNIQUE (user_id, name_key)
);
