"""Delivery reports as a channel's store keeps them: how final each status is (imports nothing
of twilio: a store read by /metrics and the console loads no client)."""

# How final a delivery report is (SQL, for one value): a report moves a row only upwards.
DELIVERY_RANK = ("(CASE {} WHEN 'failed' THEN 5 WHEN 'undelivered' THEN 5"
                 " WHEN 'read' THEN 4 WHEN 'delivered' THEN 4 WHEN 'sent' THEN 3"
                 " WHEN 'sending' THEN 2 WHEN 'queued' THEN 1 WHEN 'accepted' THEN 1"
                 " ELSE 0 END)")
