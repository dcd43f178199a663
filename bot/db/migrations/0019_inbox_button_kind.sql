-- What kind of prompt a button press answers ('approval', 'pairing'): a pairing request is
-- a prompt of its own kind, never an approval id with a prefix. NULL: an approval (rows from
-- before the kind was stored).
ALTER TABLE inbox ADD COLUMN button_kind TEXT;
