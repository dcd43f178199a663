"""What agents ask the person while they collect what they need (agents/base.py InputField
prompts, agents/reminders.py)."""

from __future__ import annotations

from persona.line_group import LineGroup


class AgentLines(LineGroup):
    """An agent's questions: `InputField(prompt=<key>)` names one of these."""

    # A field with no question of its own: {field} is its description, lower-cased.
    agent_ask_field: str = "What's {field}?"
    agent_cannot_use: str = "I can't use “{given}”: {problem}. {question}"
    # The {problem} of agent_cannot_use when the answer was empty, not of the field's type, or
    # refused by its check (an agent's own check says why in its own words).
    agent_nothing_given: str = "nothing was given"
    agent_not_valid: str = "that is not a valid value"
    agent_needs_whole_number: str = "I need a whole number here"
    agent_needs_number: str = "I need a number here"
    agent_needs_yes_or_no: str = "I need yes or no here"
    agent_needs_text: str = "I need some text here"
    note_ask_body: str = "What should the note say?"
    reminder_ask_what: str = "What should I remind you about?"
    reminder_ask_when: str = "When should I remind you? (e.g. “tomorrow 15:00” or “in 2 hours”)"
    reminder_unreadable_when: str = ("Sorry, I can't read “{given}” as a date and time. When "
                                     "should I remind you? (e.g. “tomorrow 15:00”, “in 2 "
                                     "hours” or “friday 9am”)")
    # A reminder's card ({when}: when_day, a date in the person's locale).
    reminder_card: str = "Remind you “{what}”: {when}"
    reminder_when_problem: str = "Sorry, {problem}. When should I remind you?"
    # parse_when's complaint ({when}: the date and time in the person's locale).
    when_passed: str = "{when} has already passed"
    # An agent's label as the {task} of the task lines, /pending and its card
    # (persona.catalog.said_label): task_label_<label>; an agent with no line of its own is a
    # task_label_other in languages other than English.
    task_label_reminder: str = "reminder"
    task_label_note: str = "note"
    task_label_other: str = "task"
