-- Someone else's words that came with an inbound message (a forwarded message, a quote, the
-- message replied to): a JSON list ([{"kind": "forwarded", "text": ..., "origin": ...}]), kept
-- apart from `text` (the person's own words) so a turn redone after a crash still knows
-- them as third-party text: never an answer to a card, a command or a pairing word.
ALTER TABLE inbox ADD COLUMN third_party TEXT;
