"""`valet tasks ...` from a shell, on the database a running assistant uses."""

from __future__ import annotations

import re
import sqlite3

from tests.e2e.test_console_pipe import clean_env, run_valet


async def test_tasks_are_added_listed_paused_resumed_run_and_removed(tmp_path):
    env = clean_env(tmp_path)  # no LLM configured: these commands must not need one
    rc, out, err = await run_valet(["tasks", "add", "--user", "owner", "--schedule",
                                    "weekdays at 7:30", "--remind", "stretch"], env)
    assert rc == 0, err
    assert "Reminder: stretch — weekdays at 7:30, next" in out
    assert out.rstrip().endswith("(UTC time)")  # the zone the times are in
    task_id = re.search(r"added (t\w+):", out).group(1)

    rc, out, _ = await run_valet(["tasks", "list"], env)
    header, row = out.splitlines()
    assert header.split() == ["ID", "USER", "NAME", "SCHEDULE", "NEXT", "RUN", "(the",
                              "person's", "time)", "STATUS"]
    assert re.fullmatch(rf"{task_id}  owner  Reminder: stretch  weekdays at 7:30  "
                        r"\w{3} \d{4}-\d\d-\d\d 07:30 UTC +active", row)
    rc, out, _ = await run_valet(["tasks", "pause", task_id], env)
    assert rc == 0 and f"paused {task_id}" in out
    rc, out, _ = await run_valet(["tasks", "list", "--user", "owner"], env)
    assert out.splitlines()[1].startswith(task_id) and out.splitlines()[1].endswith(" paused")
    rc, out, _ = await run_valet(["tasks", "resume", task_id], env)
    assert rc == 0 and f"resumed {task_id}" in out
    rc, out, _ = await run_valet(["tasks", "run-now", task_id], env)
    # Queued, not sent: no valet serve runs here to send it (it says so, not "sent").
    assert rc == 0 and out.strip() == (f"ran {task_id}: queued; no valet serve is running "
                                       "here: it goes when one starts")
    with sqlite3.connect(tmp_path / "valet.db") as db:  # queued for the running process
        queued = db.execute("SELECT channel, text FROM outbox").fetchall()
    assert queued == [("console", "⏰ Reminder: stretch")]
    rc, out, _ = await run_valet(["tasks", "remove", task_id], env)
    assert rc == 0 and f"removed {task_id}" in out
    rc, out, _ = await run_valet(["tasks", "list"], env)
    assert "no tasks" in out


async def test_operator_mistakes_get_a_clear_line_not_a_traceback(tmp_path):
    env = clean_env(tmp_path)
    rc, out, err = await run_valet(["tasks", "add", "--user", "owner", "--schedule",
                                    "whenever", "--instruction", "x"], env)
    assert rc == 1 and "can't read “whenever” as a schedule" in out
    assert "Traceback" not in out + err
    rc, out, _ = await run_valet(["tasks", "pause", "t000000"], env)
    assert rc == 1 and "no task 't000000'" in out
    rc, out, _ = await run_valet(["tasks", "add", "--user", "nobody", "--schedule",
                                  "every day at 9", "--remind", "x"], env)
    assert rc == 1 and "no such user: nobody" in out
