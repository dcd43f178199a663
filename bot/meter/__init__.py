"""The meter: the one gate for money. Every message Valet sends, on every channel, and every
LLM call made for a person pass it before they go.

- `gate`: `Meter.admit`, called by the outbox's deliverer for each message: the block list,
  door replies' pace, the person's allowance (the message's price counted before it goes),
  then the channel's own countries and segment cap. The SMS sender sends nothing it did not
  let out.
- `llm`: `PricedLLM`, every model the app calls: checked against the allowance at the call's
  worst cost before it goes (`AllowanceSpent` stops the turn), counted as it returns.
- `ledger`: what was spent and sent, with its time: the allowance is for the last 24 hours,
  a window no change of timezone, name or channel moves.

Money here is a person's allowance (`budget.daily_usd`, bot.spend.Allowance). What one turn
may spend on sub-tasks (how many it starts, its requests a minute) is another allowance, the
turn's: bot.contracts.allowance.TurnAllowance and bot.loop.allowance.
"""
