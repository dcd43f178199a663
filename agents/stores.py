"""The stores agents and their tools use, reached through `services_of(ctx).stores`."""

from __future__ import annotations

from dataclasses import dataclass, field

from agents.contacts.store import ContactStore
from agents.note_store import NoteStore
from agents.reminder_store import ReminderStore
from agents.tools.plan_store import PlanStore
from bot.db import Database


@dataclass
class AgentStores:
    db: Database
    notes: NoteStore = field(init=False)
    reminders: ReminderStore = field(init=False)
    plans: PlanStore = field(init=False)
    contacts: ContactStore = field(init=False)

    def __post_init__(self) -> None:
        self.notes = NoteStore(self.db)
        self.reminders = ReminderStore(self.db)
        self.plans = PlanStore(self.db)
        self.contacts = ContactStore(self.db)
