"""Reading "when" for reminders, in the user's timezone."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from agents.reminders import UNREADABLE, parse_when

PARIS = ZoneInfo("Europe/Paris")
NOW = datetime(2026, 1, 5, 10, 0, tzinfo=PARIS)  # a Monday


@pytest.mark.parametrize(("text", "expected"), [
    ("tomorrow 15:00", datetime(2026, 1, 6, 15, 0)),
    ("Tomorrow at 3 PM.", datetime(2026, 1, 6, 15, 0)),
    ("3pm tomorrow", datetime(2026, 1, 6, 15, 0)),
    ("tmrw 8am", datetime(2026, 1, 6, 8, 0)),
    ("in 2 hours", datetime(2026, 1, 5, 12, 0)),
    ("in an hour", datetime(2026, 1, 5, 11, 0)),
    ("in 30 min", datetime(2026, 1, 5, 10, 30)),
    ("in 3 days", datetime(2026, 1, 8, 10, 0)),
    ("tonight", datetime(2026, 1, 5, 20, 0)),
    ("today at 12pm", datetime(2026, 1, 5, 12, 0)),
    ("noon", datetime(2026, 1, 5, 12, 0)),
    ("15:00", datetime(2026, 1, 5, 15, 0)),
    ("9:00", datetime(2026, 1, 6, 9, 0)),  # already past today: the next one
    ("at 7pm", datetime(2026, 1, 5, 19, 0)),
    ("friday at 9", datetime(2026, 1, 9, 9, 0)),
    ("monday", datetime(2026, 1, 12, 9, 0)),  # said on a Monday: next week's
    ("next monday at 10:30", datetime(2026, 1, 12, 10, 30)),
    ("2026-03-10T09:00", datetime(2026, 3, 10, 9, 0)),
    ("2026-03-10 09:00", datetime(2026, 3, 10, 9, 0)),
    ("2026-03-10", datetime(2026, 3, 10, 9, 0)),
])
def test_phrases_and_iso_are_read_in_the_users_timezone(text, expected):
    assert parse_when(text, NOW) == expected.replace(tzinfo=PARIS)


def test_an_explicit_offset_is_kept_and_shown_in_the_users_zone():
    when = parse_when("2026-03-10T09:00+00:00", NOW)
    assert when == datetime(2026, 3, 10, 10, 0, tzinfo=PARIS)
    assert when.tzinfo == PARIS


def test_daylight_saving_gaps_and_relative_times():
    before_jump = datetime(2026, 3, 28, 23, 0, tzinfo=PARIS)
    # 02:30 does not exist on 29 March in Paris (clocks jump to 03:00): moved past the gap.
    assert parse_when("tomorrow 2:30", before_jump).isoformat() == "2026-03-29T03:30:00+02:00"
    # "in 4 hours" is four real hours, whatever the wall clock does.
    assert parse_when("in 4 hours", before_jump).isoformat() == "2026-03-29T04:00:00+02:00"


@pytest.mark.parametrize("text", ["someday", "what's the weather tomorrow?", "25:00",
                                  "in 2 fortnights", "13pm", ""])
def test_unreadable_text_is_refused(text):
    with pytest.raises(ValueError, match=UNREADABLE):
        parse_when(text, NOW)


@pytest.mark.parametrize("text", ["today 9am", "yesterday at 9", "2026-01-01"])
def test_times_already_past_are_refused(text):
    with pytest.raises(ValueError, match="has already passed"):
        parse_when(text, NOW)
