-- A person's language (persona.catalog: en, es, fr, de, pt; NULL: the persona's). Number 49
-- (the language issue) so that migrations others add meanwhile keep their numbers.
-- language_offered: the language Valet proposed after their first messages (once ever);
-- language_answered_at: when that offer was answered or passed by (it is asked once).
ALTER TABLE users ADD COLUMN language TEXT;
ALTER TABLE users ADD COLUMN language_offered TEXT;
ALTER TABLE users ADD COLUMN language_answered_at TIMESTAMPTZ;
