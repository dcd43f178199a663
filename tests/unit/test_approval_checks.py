"""Issue [truth] 1 and 2: every built-in tool that always asks first has a check that runs
before the card, and an approved call's outcome is read from its tool's typed outcome."""

from __future__ import annotations

import pytest

from agents.registry import load_registry
from bot.approvals.flow import typed
from bot.config.registries import registry_paths
from bot.contracts.approvals import ExecutionStatus
from bot.tools.registry import ToolOutcome, ToolStatus


def test_every_built_in_tool_that_always_asks_checks_before_asking():
    tools = load_registry(registry_paths([])).tools
    asking = sorted(t.name for t in tools if t.requires_approval and not t.is_agent)
    assert asking == sorted([
        "delete_note", "create_event", "move_event", "cancel_event", "send_mail",
        "reply_to_mail", "forget", "forget_everything", "propose_contact", "delete_contact",
        "message_someone"])
    assert [name for name in asking if tools.get(name).prepare is None] == []


@pytest.mark.parametrize("outcome,status,said", [
    (ToolOutcome.done("Deleted note #3."), ExecutionStatus.EXECUTED, "Deleted note #3."),
    ("Email sent.", ExecutionStatus.EXECUTED, "Email sent."),  # a plain value: done
    (ToolOutcome.refused("Refused: read-only calendar."), ExecutionStatus.REFUSED,
     "Refused: read-only calendar."),
    (ToolOutcome.refused("read-only calendar."), ExecutionStatus.REFUSED,
     "Refused, nothing was done: read-only calendar."),
    (ToolOutcome.failed("Error: 503"), ExecutionStatus.FAILED, "Error: 503"),
    (ToolOutcome.unknown("the connection broke mid-send."), ExecutionStatus.UNKNOWN,
     "Outcome unknown: the connection broke mid-send."),
    (ToolOutcome("", "", ToolStatus.TIMEOUT, "Error: it did not finish within 30 s."),
     ExecutionStatus.UNKNOWN, "Error: it did not finish within 30 s."),
    (ToolOutcome("", "", ToolStatus.INTERRUPTED, "the server stopped mid-call."),
     ExecutionStatus.UNKNOWN, "Outcome unknown: the server stopped mid-call."),
    (ToolOutcome("", "", ToolStatus.WAITING, "asked for the date."), ExecutionStatus.FAILED,
     "Not completed: asked for the date."),
])
def test_an_approved_calls_outcome_is_its_tools_typed_outcome(outcome, status, said):
    assert typed(outcome) == (status, said)
