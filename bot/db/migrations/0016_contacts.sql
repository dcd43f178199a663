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

-- Numbers and chats that said STOP while they were nobody's identity (someone a person had
-- Valet text): nothing more is sent to them until they say START. A user's own identities
-- keep their opt-out on the identities row.
CREATE TABLE stranger_opt_outs (
    channel TEXT NOT NULL,
    address TEXT NOT NULL,
    opted_out_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (channel, address)
);
