-- The workers' sweep (bot.work.sweep) looks for messages nobody is working on: only the open
-- rows, which this index holds, are read (the inbox keeps every message ever received).
CREATE INDEX inbox_open ON inbox (received_at) WHERE status IN ('received', 'processing');
