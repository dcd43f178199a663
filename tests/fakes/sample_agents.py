"""Agents for tests: registered through registry files the tests write."""

from __future__ import annotations

from agents.base import AgentResult, InputField, StandardAgent

SENT: list[dict[str, object]] = []  # what EmailAgent "sent", for assertions


class TicketAgentV1(StandardAgent):
    """Open a support ticket."""

    label = "ticket"
    summary = InputField(str, "What the problem is", prompt="What's the problem?")
    priority = InputField(int, "Priority from 1 (urgent) to 5", required=False, default=3,
                          validator=lambda p: 1 <= p <= 5, validator_description="1 to 5")

    async def on_running(self) -> AgentResult:
        return self.make_result(f"Ticket opened: {self.summary} (priority {self.priority})")


class TicketAgentV2(TicketAgentV1):
    """Open a support ticket (now with a contact address)."""

    contact = InputField(str, "Email address to reply to",
                         validator=lambda s: None if "@" in s else "that is not an email address",
                         validator_description="must contain @")


class EmailAgent(StandardAgent):
    """Send an email for the user."""

    label = "email"
    to = InputField(str, "Recipient email address",
                    validator=lambda s: None if "@" in s else "that is not an email address",
                    validator_description="must contain @")
    subject = InputField(str, "Subject line", required=False, default="(no subject)")

    def needs_approval(self) -> bool:
        return not str(self.to).endswith("@example.com")

    async def on_running(self) -> AgentResult:
        SENT.append({"to": self.to, "subject": self.subject})
        return self.make_result(f"Sent to {self.to}.")


class BrokenAgent(StandardAgent):
    """Always fails."""

    thing = InputField(str, "A thing")

    async def on_running(self) -> AgentResult:
        raise RuntimeError("the widget broke")


class NotAnAgent:
    """Not a StandardAgent."""


class ReservedFieldAgent(StandardAgent):
    """Declares a field with a reserved name."""

    task_instruction = InputField(str, "clashes with the built-in parameter")


class BadTypeAgent(StandardAgent):
    """Declares a field whose type has no JSON schema."""

    when = InputField(object.__new__, "not a type")  # type: ignore[arg-type]
