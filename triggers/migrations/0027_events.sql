-- Events from outside (POST /events), stored before they are acknowledged, in arrival order
-- (seq). id: the sender's own id when it gave one (a retry with the same id stores nothing
-- new), else a random one. status: received | processing (claimed by a dispatcher) | done |
-- failed (its handlers kept failing). A row left `processing` by a dead process is claimed
-- again; the trigger engine's run key (task, event id) makes a second dispatch run nothing
-- twice.
CREATE TABLE events (
    seq {autoid},
    id TEXT NOT NULL UNIQUE,
    source TEXT NOT NULL,
    type TEXT NOT NULL,
    data TEXT NOT NULL,
    status TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    received_at TIMESTAMPTZ NOT NULL,
    claimed_at TIMESTAMPTZ,
    next_attempt_at TIMESTAMPTZ NOT NULL,
    done_at TIMESTAMPTZ,
    error TEXT
);
CREATE INDEX events_due ON events (status, next_attempt_at, seq);
