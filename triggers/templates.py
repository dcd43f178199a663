"""Task templates a person turns on in one sentence. The morning summary asks only for what
this deployment can do: a capability with no tool is not mentioned at all, so the LLM never
apologises for a weather service nobody configured."""

from __future__ import annotations

from collections.abc import Collection

MORNING_SUMMARY = "morning_summary"

# capability -> (tools any one of which provides it, what to ask for)
_CAPABILITIES: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("weather", ("get_weather", "weather"), "today's weather where I am"),
    ("calendar", ("list_events", "calendar_events", "get_calendar"), "today's calendar"),
    ("reminders", ("list_reminders", "list_scheduled_tasks"), "reminders due today"),
    ("todos", ("list_notes", "list_todos"), "to-dos or notes due today"),
    # Always there: the approval flow puts what waits into every turn's context.
    ("approvals", (), "anything waiting for my approval"),
)


def morning_summary_instruction(tools: Collection[str]) -> str:
    asks = [ask for _, names, ask in _CAPABILITIES
            if not names or any(n in tools for n in names)]
    wanted = "; ".join(asks) if asks else "anything I should know about today"
    return ("Good-morning summary. Look up: " + wanted + ". Use only those tools; do not "
            "mention anything you could not look up. Write plain text (no markdown), at most "
            "300 characters (it is read as one or two SMS). If there is nothing at all, say "
            "so in one short line.")


def instruction_for(template: str | None, fallback: str, tools: Collection[str]) -> str:
    """A template's instruction as of now (capabilities added later join in)."""
    if template == MORNING_SUMMARY:
        return morning_summary_instruction(tools)
    return fallback
