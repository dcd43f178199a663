-- When the person was asked which of their number's time zones is theirs: asked once only.
ALTER TABLE users ADD COLUMN timezone_asked_at TIMESTAMPTZ;
