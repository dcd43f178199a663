"""Text where it enters and leaves: sanitize, redact, untrusted, split, when (dates and times
as people say them), phones (E.164 numbers)."""
