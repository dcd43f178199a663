-- Events for an event task, held for the run that takes them: the first event of a task runs
-- at once; those that follow within triggers.event_window_seconds wait and go to one run when
-- the window ends. A held event names its run once it has one (run_key), so a run redone
-- after a crash reads the same events; a finished run's events are deleted.
CREATE TABLE trigger_events_held (
    seq {autoid},  -- arrival order
    task_id TEXT NOT NULL REFERENCES trigger_tasks(id) ON DELETE CASCADE,
    event_id TEXT NOT NULL,
    source TEXT NOT NULL,
    type TEXT NOT NULL,
    data TEXT NOT NULL,
    received_at TIMESTAMPTZ NOT NULL,
    run_key TEXT,
    UNIQUE (task_id, event_id)
);
CREATE INDEX trigger_events_held_by_run ON trigger_events_held (task_id, run_key);
