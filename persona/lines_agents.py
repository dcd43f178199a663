"""What agents ask the person while they collect what they need (agents/base.py InputField
prompts, agents/reminders.py), and how Valet proposes and confirms a person's language
(bot/people/language_offer.py, /language)."""

from __future__ import annotations

from persona.line_group import LineGroup


class AgentLines(LineGroup):
    """An agent's questions: `InputField(prompt=<key>)` names one of these."""

    # A field with no question of its own: {field} is its description, lower-cased.
    agent_ask_field: str = "What's {field}?"
    agent_cannot_use: str = "I can't use “{given}”: {problem}. {question}"
    note_ask_body: str = "What should the note say?"
    reminder_ask_what: str = "What should I remind you about?"
    reminder_ask_when: str = "When should I remind you? (e.g. “tomorrow 15:00” or “in 2 hours”)"
    reminder_unreadable_when: str = ("Sorry, I can't read “{given}” as a date and time. When "
                                     "should I remind you? (e.g. “tomorrow 15:00”, “in 2 "
                                     "hours” or “friday 9am”)")
    reminder_when_problem: str = "Sorry, {problem}. When should I remind you?"
    # parse_when's complaint ({when}: the date and time in the person's locale).
    when_passed: str = "{when} has already passed"


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
