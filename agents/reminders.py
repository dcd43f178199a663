"""Reminders: an agent that drafts one (what + when, in the user's timezone), stores it in the
`reminders` table and, when its status is `pending`, schedules it with the trigger engine (a
one-time task with the `reminder` executor: its text is sent then, with no LLM call).

`when` is read in the user's timezone by `bot.text.when.parse_when`; anything it cannot read (or a
time already past) is asked again.
"""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from agents.base import AgentResult, InputField, StandardAgent
from agents.reminder_store import ReminderStore
from agents.services import services_of
from bot.contracts.tool_context import ToolExecutionContext
from bot.text.when import UNREADABLE, TimePassed, parse_when
from bot.tools.registry import READS, tool
from persona.catalog import say
from persona.spoken import spoken_date, spoken_time
from triggers.service import Owner


def reminders_of(ctx: ToolExecutionContext) -> ReminderStore:
    return services_of(ctx).stores.reminders


def describe(when: datetime) -> str:
    """For the model (tool results): the full date, the time and the zone."""
    return f"{when:%A} {when.day} {when:%B %Y} at {when:%H:%M} ({when.tzinfo})"


class ReminderDraftAgent(StandardAgent):
    """Set up a reminder for the user: what to remind them about and when."""

    label = "reminder"

    what = InputField(str, "What to remind the user about, e.g. \"call mom\"",
                      prompt="reminder_ask_what")
    when = InputField(
        str, "When to remind them, as the user said it or in ISO 8601, in the user's timezone",
        prompt="reminder_ask_when",
        validator_description="a future date/time such as 'tomorrow 15:00', 'in 2 hours', "
                              "'friday 9am' or '2026-03-10T09:00'")

    def approval_summary(self) -> str:
        """The card, in the person's language and locale: "Remind you “call mom”: Thursday
        3 December at 15:00" (a date, not "tomorrow": a card is read later too)."""
        if not (self.what and self.when):
            return super().approval_summary()
        due = datetime.fromisoformat(self.when)
        return say("reminder_card", what=self.what,
                   when=say("when_day", day=spoken_date(due), time=spoken_time(due)))

    def clean_when(self, value: str) -> str:
        """The time as ISO 8601 in the user's timezone (ValueError: ask again)."""
        try:
            return parse_when(value, self.context.now()).isoformat()
        except TimePassed as err:  # said in the person's language and locale
            raise ValueError(say("when_passed", when=f"{spoken_date(err.when)}, "
                                                     f"{spoken_time(err.when)}")) from None

    def question_for(self, spec: InputField, problem: str | None = None,
                     given: object = None) -> str:
        if spec.name == "when" and problem == UNREADABLE:
            return say("reminder_unreadable_when", given=given)
        if spec.name == "when" and problem:
            return say("reminder_when_problem", problem=problem)
        return super().question_for(spec, problem, given)

    async def on_running(self) -> AgentResult:
        due = datetime.fromisoformat(self.when).astimezone(self.context.tz)
        status = str(self.settings.get("status", "pending"))
        reminder = await reminders_of(self.context).add(
            self.context.user_id, self.what, due, self.context.timezone, status=status,
            source_text=self.task_instruction, at=self.context.clock.now())
        if status != "pending":
            return self.make_result(
                f"Saved reminder #{reminder.id}: “{self.what}” on {describe(due)} as a draft "
                f"(status {status}): it will not be sent until it is scheduled.",
                id=reminder.id, due=due.isoformat())
        owner = Owner(self.context.user_id, self.context.timezone, f"reminder:{reminder.id}",
                      channel=self.context.channel or None)
        task = await services_of(self.context).tasks.remind(owner, self.what, due)
        return self.make_result(
            f"Saved reminder #{reminder.id} and scheduled it (task {task.id}): “{self.what}” on "
            f"{describe(due)}. It will be sent to the user then.",
            id=reminder.id, due=due.isoformat(), task_id=task.id)


@tool(progress="checking your reminders", safe_to_repeat=True, does=READS)
async def list_reminders(ctx: ToolExecutionContext) -> str:
    """List the user's upcoming reminders (saved, not yet delivered)."""
    found = await reminders_of(ctx).upcoming(ctx.user_id)
    if not found:
        return "The user has no upcoming reminders."
    return "\n".join(f"#{r.id} {describe(r.due_at.astimezone(ZoneInfo(r.timezone)))}: "
                     f"{r.text} ({r.status})" for r in found)
