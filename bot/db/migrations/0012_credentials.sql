-- Credentials (issue 16): per person and service (calendar, email...), a Fernet token of the
-- JSON secret (passwords, tokens, private URLs). Never stored in the clear: the key lives only
-- in the environment (VALET_SECRET_KEY).
CREATE TABLE credentials (
    user_id TEXT NOT NULL REFERENCES users(id),
    service TEXT NOT NULL,
    secret TEXT NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (user_id, service)
);

-- The person's default place for the weather ("I live in Lyon"), as JSON: name, country
-- code, latitude, longitude, timezone.
ALTER TABLE users ADD COLUMN place TEXT;
