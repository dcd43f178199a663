-- What the messages Valet sent cost a person (a channel that charges per message adds each
-- part's price: SMS today), whichever channel charged it: the column is no longer named
-- after one (bot/spend.py).
ALTER TABLE daily_spend RENAME COLUMN sms_micros TO messages_micros;
