-- The turn journal: what a turn has done so far, written as it happens, so a turn redone
-- after a crash or a retry continues instead of repeating side effects. One row per entry:
--   llm:<step>             the step-th LLM response of the turn (JSON)
--   start:<step>:<call>    a tool call began (name, arguments)
--   result:<step>:<call>   its outcome (ToolOutcome as JSON, pause included)
--   step:<key>             an orchestrator step's own record
--   closed                 the turn was stopped (/stop): never replayed
-- Rows go once the turn is stored in the history.
CREATE TABLE turn_journal (
    turn_id TEXT NOT NULL,
    entry_key TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (turn_id, entry_key)
);
CREATE INDEX turn_journal_by_age ON turn_journal (created_at);
