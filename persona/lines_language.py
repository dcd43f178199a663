"""A person's language (/language, the offer after their first messages: bot/turn/language.py)
and dates and times as they are said in it (persona/spoken.py: the day and time themselves
are written by Babel in the person's locale)."""

from __future__ import annotations

from persona.line_group import LineGroup


class LanguageLines(LineGroup):
    """A person's language (/language, the offer after their first messages). Each catalog
    writes these in its own language: {language} is that language's own name ("español")."""

    # Proposed once, in the language the person wrote in; they answer with language_yes_word.
    language_offer: str = "Would you like me to write to you in {language}? Reply {yes}."
    language_yes_word: str = "YES"
    language_set: str = "Okay, I'll write to you in {language} from now on."
    language_current: str = ("I write to you in {language}. To change it: /language and one "
                             "of {codes}.")
    language_unknown: str = "I don't know the language {code}. I can write in: {codes}."
    about_language: str = "the language I write to you in: /language es"


class WhenLines(LineGroup):
    """A moment as a person reads it: {time} is the time in their locale ("15:00", "3:00 PM"),
    {day} the weekday ("Monday") or the date (when_date: "Monday 7 December")."""

    when_today: str = "today at {time}"
    when_tomorrow: str = "tomorrow at {time}"
    when_day: str = "{day} at {time}"
    when_date: str = "{weekday} {day} {month}"
    # A schedule that runs at one time of day ({time}), and its next run after it.
    when_every_day: str = "every day at {time}"
    when_weekdays: str = "weekdays at {time}"
    when_weekends: str = "weekends at {time}"
    when_next: str = "{schedule}, next {when}"
    when_today_only: str = "today"
    when_tomorrow_only: str = "tomorrow"
