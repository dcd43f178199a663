-- Media that came with an inbound message (a photo): the channel's durable references as a
-- JSON list ([{"kind": "photo", "ref": "<file_id>", "mime": ..., "size": ...}]), never the
-- bytes, which are fetched from the channel when the turn runs.
ALTER TABLE inbox ADD COLUMN media TEXT;
