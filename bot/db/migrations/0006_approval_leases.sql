-- An execution holds a lease while it runs: `begin_execution` sets it, a heartbeat renews it,
-- and a request whose lease lapsed (its process died) is settled as failed ("interrupted").
-- A decided-but-not-started request (`approved`) holds one too, until execution begins.
ALTER TABLE approvals ADD COLUMN lease_until TIMESTAMPTZ;
-- Creation order among one user's requests (ids are random; approvals of one turn share a
-- created_at). Rows from before this migration keep 0 and sort by created_at.
ALTER TABLE approvals ADD COLUMN seq BIGINT NOT NULL DEFAULT 0;
-- The sweeper looks for lapsed leases across users.
CREATE INDEX approvals_leased ON approvals (status, lease_until);
