-- Media that came with an inbound message (a photo): the channel's durable references as a
-- JSON list ([{"kind": "photo", "ref": "<file_id>", "mime": ..., "size": ...}]), never the
-- bytes, which are fetched from the channel when the turn runs.
ALTER TABLE inbox ADD COLUMN media TEXT;

-- When the person tapped Edit on a pending approval and Valet asked what to change: their
-- next message is the change (explicit state, not something only the prompt remembers).
ALTER TABLE approvals ADD COLUMN change_asked_at TIMESTAMPTZ;
