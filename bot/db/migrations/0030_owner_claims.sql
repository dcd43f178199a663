-- The one-time code that makes its first sender the owner, when no owner address is
-- configured (`valet serve` prints it). Used once: `claimed_at` is set by a compare-and-set,
-- with who claimed it; a code configured away (an owner was added) is closed the same way.
CREATE TABLE owner_claims (
    code TEXT PRIMARY KEY,
    created_at TIMESTAMPTZ NOT NULL,
    claimed_at TIMESTAMPTZ,
    channel TEXT,
    address TEXT
);
