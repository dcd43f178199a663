-- Triggers: tasks that run without a message (schedules, events, conditions), every run
-- recorded once, and the lease that lets one scheduler lead among several processes.

-- kind: cron | interval | once | event | condition. The trigger's own fields are columns so
-- the due query is one indexed scan; event filters and condition checks are JSON.
-- status: active | paused | disabled | completed | pending_approval | expired.
-- misfire: catch_up (the latest missed run goes once, within grace_seconds) | skip.
CREATE TABLE trigger_tasks (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users(id),
    name TEXT NOT NULL,
    kind TEXT NOT NULL,
    cron TEXT,
    timezone TEXT NOT NULL,
    interval_seconds INTEGER,
    run_at TIMESTAMPTZ,
    event_filter TEXT,
    condition TEXT,
    executor TEXT NOT NULL DEFAULT 'orchestrator',
    action TEXT NOT NULL DEFAULT '{}',
    channel TEXT,
    status TEXT NOT NULL,
    -- the status to return to when a run's approvals are settled
    resume_status TEXT,
    misfire TEXT NOT NULL,
    grace_seconds INTEGER NOT NULL,
    -- a run that says it has nothing to report sends nothing
    quiet_when_nothing INTEGER NOT NULL DEFAULT 0,
    template TEXT,
    next_run_at TIMESTAMPTZ,
    last_run_at TIMESTAMPTZ,
    -- conditions: the last observed value (JSON) and whether it held, so a restart does not
    -- fire again on a level that was already true
    last_value TEXT,
    last_held INTEGER NOT NULL DEFAULT 0,
    last_fired_at TIMESTAMPTZ,
    created_from TEXT,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX trigger_tasks_due ON trigger_tasks (status, next_run_at);
CREATE INDEX trigger_tasks_by_user ON trigger_tasks (user_id, status);

-- One row per run, unique per (task, run key): the scheduled time for schedules, the event id
-- for events, the transition time for conditions. A duplicate fire inserts nothing.
-- outcome: submitted | sent | nothing | missed | failed | waiting_approval | expired | done
CREATE TABLE trigger_runs (
    id {autoid},
    task_id TEXT NOT NULL REFERENCES trigger_tasks(id) ON DELETE CASCADE,
    run_key TEXT NOT NULL,
    scheduled_at TIMESTAMPTZ NOT NULL,
    fired_at TIMESTAMPTZ NOT NULL,
    outcome TEXT NOT NULL,
    detail TEXT,
    nothing_to_report INTEGER NOT NULL DEFAULT 0,
    UNIQUE (task_id, run_key)
);

CREATE TABLE trigger_leases (
    name TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL
);
