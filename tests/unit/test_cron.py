"""Cron as a person in their own timezone reads it: 0 is Sunday, daylight-saving changes
neither lose nor double a run, and schedules read back in words."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from triggers.cron import CronError, next_cron_time, parse_cron
from triggers.phrases import ScheduleError, parse_schedule
from triggers.schedule_words import describe_cron

NY = ZoneInfo("America/New_York")


def local(at: datetime, zone: ZoneInfo = NY) -> str:
    return at.astimezone(zone).strftime("%a %Y-%m-%d %H:%M %Z")


def test_day_of_week_zero_is_sunday_and_seven_too():
    saturday_noon = datetime(2026, 3, 7, 12, tzinfo=UTC)
    for text in ("0 9 * * 0", "0 9 * * 7", "0 9 * * sun"):
        assert local(next_cron_time(parse_cron(text), "UTC", saturday_noon), ZoneInfo("UTC")) \
            == "Sun 2026-03-08 09:00 UTC"
    monday = next_cron_time(parse_cron("0 9 * * 1"), "UTC", saturday_noon)
    assert local(monday, ZoneInfo("UTC")) == "Mon 2026-03-09 09:00 UTC"


def test_a_morning_run_is_at_the_local_time_not_the_servers():
    after = datetime(2026, 1, 5, 0, 0, tzinfo=UTC)
    at = next_cron_time(parse_cron("30 7 * * 1-5"), "Asia/Tokyo", after)
    assert at == datetime(2026, 1, 5, 22, 30, tzinfo=UTC)  # 07:30 Tuesday in Tokyo


def test_spring_forward_runs_a_skipped_time_just_after_the_gap_once():
    spec = parse_cron("30 2 * * *")  # 02:30 does not exist in New York on 8 March 2026
    runs, at = [], datetime(2026, 3, 6, 12, tzinfo=UTC)
    for _ in range(4):
        at = next_cron_time(spec, "America/New_York", at)
        runs.append(local(at))
    assert runs == ["Sat 2026-03-07 02:30 EST", "Sun 2026-03-08 03:30 EDT",
                    "Mon 2026-03-09 02:30 EDT", "Tue 2026-03-10 02:30 EDT"]


def test_fall_back_runs_a_repeated_time_once():
    spec = parse_cron("30 1 * * *")  # 01:30 happens twice in New York on 1 November 2026
    runs, at = [], datetime(2026, 10, 31, 12, tzinfo=UTC)
    for _ in range(3):
        at = next_cron_time(spec, "America/New_York", at)
        runs.append(local(at))
    assert runs == ["Sun 2026-11-01 01:30 EDT", "Mon 2026-11-02 01:30 EST",
                    "Tue 2026-11-03 01:30 EST"]
    # Asked from inside the repeated hour (01:45 EST, after the first 01:30), the answer is
    # tomorrow, not the second 01:30.
    second_hour = datetime(2026, 11, 1, 6, 45, tzinfo=UTC)
    assert local(next_cron_time(spec, "America/New_York", second_hour)) == \
        "Mon 2026-11-02 01:30 EST"


@pytest.mark.parametrize("text,problem", [
    ("30 7 * *", "5 fields"), ("61 7 * * *", "minute"), ("0 9 * * 8", "weekday"),
    ("0 9 * * funday", "weekday"), ("0 9 31-2 * *", "day of month")])
def test_bad_cron_says_which_field(text, problem):
    with pytest.raises(CronError, match=problem):
        parse_cron(text)


def test_schedules_in_words():
    assert describe_cron(parse_cron("30 7 * * 1-5")) == "weekdays at 7:30"
    assert describe_cron(parse_cron("0 18 * * *")) == "every day at 18:00"
    assert describe_cron(parse_cron("0 9 * * 0")) == "Sundays at 9:00"


def test_plain_language_schedules():
    now = datetime(2026, 1, 5, 9, tzinfo=ZoneInfo("Europe/Paris"))
    assert parse_schedule("every day at 7:30", now).cron == "30 7 * * *"
    assert parse_schedule("weekdays at 8am", now).cron == "0 8 * * 1-5"
    assert parse_schedule("every sunday at 18:00", now).cron == "0 18 * * 0"
    assert parse_schedule("every 2 hours", now).interval_seconds == 7200
    once = parse_schedule("tomorrow at 3pm", now).run_at
    assert once == datetime(2026, 1, 6, 15, tzinfo=ZoneInfo("Europe/Paris"))
    with pytest.raises(ScheduleError, match="every day at 7:30"):
        parse_schedule("whenever you feel like it", now)
