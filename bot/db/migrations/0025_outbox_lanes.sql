-- Fair delivery: each address's messages form lanes, and a deliverer takes the first message
-- of an address in (priority, id) order. priority: 0 urgent (a reply to what the person just
-- sent, approval prompts, pairing, edits of prompts), 1 the rest of a long message whose first
-- parts went out, 2 bulk (reminders, summaries, event results). Rows queued before this
-- migration keep their old order (all urgent). parts_sent: how many of a long message's parts
-- the channel already delivered, so the rest continues there, in any process.
ALTER TABLE outbox ADD COLUMN priority INTEGER NOT NULL DEFAULT 0;
ALTER TABLE outbox ADD COLUMN parts_sent INTEGER NOT NULL DEFAULT 0;
-- An address's messages still to go, in the order they go: the head of its queue is one
-- indexed lookup, and the claim's "nothing ahead of it" check is another.
CREATE INDEX outbox_lanes ON outbox (channel, address, status, priority, id);
