"""The meter: the one gate for money. Every message Valet sends, on every channel, and every
LLM call made for a person pass it before they go.

- `gate`: `Meter.admit`, called by the outbox's deliverer for each message: the block list,
  door replies' pace, the person's budget (the message's price counted before it goes),
  then the channel's own countries and segment cap. The SMS sender sends nothing it did not
  let out.
- `llm`: `PricedLLM`, every model the app calls: checked against the budget at the call's
  worst cost before it goes (`BudgetSpent` stops the turn), counted as it returns.
- `ledger`: what was spent and sent, with its time: the budget is for the last 24 hours,
  a window no change of timezone, name or channel moves.

Money here is a person's budget (`budget.daily_usd`, bot.budget.Budget). What one turn may
spend on sub-tasks (how many it starts, its requests a minute) is not money: it is the turn's
sub-task allowance (bot.contracts.subtask_allowance, bot.loop.subtask_llm).
"""
