"""Agent-Tools: the schema the LLM sees, schema_version, and how extracted arguments are
treated (adopted, asked again, defaulted, asked for)."""

from __future__ import annotations

import json

from agents.base import AgentStatus, InputField, StandardAgent
from agents.runtime import APPROVAL_MARK, AgentSpec, agent_tool
from bot.contracts.approvals import ApprovalDraft
from bot.contracts.clock import FakeClock
from bot.contracts.pause import PausedTask
from bot.contracts.tool_context import ToolExecutionContext
from bot.llm.port import ToolCall
from bot.tools.calls import run_tool_call
from bot.tools.registry import ToolRegistry, ToolStatus
from tests.fakes.sample_agents import EmailAgent, TicketAgentV1, TicketAgentV2


def spec(cls: type[StandardAgent], **kw) -> AgentSpec:
    return AgentSpec(name=kw.pop("name", "agent"), cls=cls, description=cls.description(), **kw)


async def call(tool_spec: AgentSpec, **arguments):
    registry = ToolRegistry([agent_tool(tool_spec)])
    ctx = ToolExecutionContext(user_id="u1", clock=FakeClock())
    return await run_tool_call(registry, ToolCall("c1", tool_spec.name, json.dumps(arguments)),
                               ctx, timeout=5)


def test_input_fields_become_parameters_with_hints_and_task_instruction():
    schema = agent_tool(spec(TicketAgentV2, name="open_ticket")).schema()["function"]
    assert schema["name"] == "open_ticket"
    assert schema["description"] == "Open a support ticket (now with a contact address)."
    props = schema["parameters"]["properties"]
    assert list(props) == ["summary", "priority", "contact", "task_instruction"]
    assert props["priority"]["type"] == "integer"
    assert props["priority"]["description"] == "Priority from 1 (urgent) to 5 (1 to 5)"
    assert props["contact"]["description"].startswith("Email address to reply to (must contain @)")
    assert "Required" in props["summary"]["description"]
    assert "Required" not in props["priority"]["description"]
    assert "e.g." in props["task_instruction"]["description"]
    # Nothing is JSON-required: a model forced to fill a field invents one; missing is asked.
    assert "required" not in schema["parameters"]


def test_description_override_and_approval_marker():
    email = agent_tool(AgentSpec(name="send_email", cls=EmailAgent, description="Mail it."))
    assert email.description == f"Mail it. {APPROVAL_MARK}"
    assert APPROVAL_MARK not in agent_tool(spec(EmailAgent, approval="never")).description
    assert agent_tool(spec(TicketAgentV1, approval="always")).description.endswith(APPROVAL_MARK)
    assert agent_tool(spec(TicketAgentV1)).is_agent


def test_schema_version_changes_with_the_fields_not_their_wording():
    class A(StandardAgent):
        """A."""
        x = InputField(str, "one wording")

    class B(StandardAgent):
        """B."""
        x = InputField(str, "another wording", prompt="Which x?")

    class C(StandardAgent):
        """C."""
        x = InputField(int, "one wording")

    class D(StandardAgent):
        """D."""
        x = InputField(str, "one wording", required=False)

    assert A.schema_version() == B.schema_version()
    assert len({A.schema_version(), C.schema_version(), D.schema_version(),
                TicketAgentV1.schema_version(), TicketAgentV2.schema_version()}) == 5


def test_questions_read_naturally_without_a_prompt():
    assert InputField(str, "Recipient email address").question() == \
        "What's the recipient email address?"
    assert InputField(str, "The subject line (short)").question() == "What's the subject line?"
    assert InputField(str, "URL of the page").question() == "What's the URL of the page?"
    assert InputField(str, "x", prompt="Who should get it?").question() == "Who should get it?"


async def test_valid_arguments_are_adopted_and_optional_ones_default():
    outcome = await call(spec(TicketAgentV1), summary="printer on fire")
    assert outcome.status is ToolStatus.SUCCESS
    assert outcome.result_status == "COMPLETED"
    assert outcome.content == "Ticket opened: printer on fire (priority 3)"


async def test_missing_required_field_pauses_with_its_question():
    outcome = await call(spec(TicketAgentV1), priority=1)
    assert outcome.status is ToolStatus.WAITING
    assert outcome.result_status == AgentStatus.WAITING_FOR_INPUT.value
    task = outcome.pause
    assert isinstance(task, PausedTask)
    assert task.question == "What's the problem?"
    assert task.fields == {"priority": 1} and task.state["asking"] == "summary"
    assert task.schema_version == TicketAgentV1.schema_version()
    assert "What's the problem?" in outcome.content and "waiting" in outcome.content


async def test_invalid_arguments_are_asked_again_with_what_was_wrong():
    outcome = await call(spec(TicketAgentV2), summary="VPN down", contact="bob at work")
    assert outcome.status is ToolStatus.WAITING
    assert outcome.pause.question == ("I can't use “bob at work”: that is not an email address. "
                                      "What's the email address to reply to?")
    # Invalid optional values are asked about too, rather than silently replaced by defaults.
    outcome = await call(spec(TicketAgentV1), summary="VPN down", priority=9)
    assert outcome.status is ToolStatus.WAITING
    assert "1 to 5" in outcome.pause.question
    outcome = await call(spec(TicketAgentV1), summary="VPN down", priority="soon")
    assert "I need a whole number here" in outcome.pause.question


async def test_agent_policy_asks_for_confirmation_only_when_the_agent_says_so():
    outcome = await call(spec(EmailAgent), to="ann@example.com")
    assert outcome.status is ToolStatus.SUCCESS
    outcome = await call(spec(EmailAgent), to="ann@elsewhere.org", subject="Hi")
    assert outcome.status is ToolStatus.WAITING
    assert outcome.result_status == "WAITING_FOR_APPROVAL"
    # An approval draft bound to exactly these values (bot.approvals.flow makes it durable).
    assert isinstance(outcome.pause, ApprovalDraft)
    assert outcome.pause.summary == "Email (to: ann@elsewhere.org, subject: Hi)"
    assert outcome.pause.arguments == {"to": "ann@elsewhere.org", "subject": "Hi"}
    never = await call(spec(EmailAgent, approval="never"), to="ann@elsewhere.org")
    assert never.status is ToolStatus.SUCCESS
