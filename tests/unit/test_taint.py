"""Issue 43 item 3 (the taint): the registry declares each tool's effect (reads, changes,
sends), and once a turn holds third-party text every call that changes or sends asks first,
whatever its `approval:` says; a declared read still runs. Checked over every built-in tool
through the one gate (bot.approvals.flow.ApprovalFlow.gate) and the agents' own approval
point."""

from __future__ import annotations

import pytest

from agents.registry import load_registry
from bot.approvals.flow import ApprovalFlow, asks_first
from bot.config.registries import registry_paths
from bot.contracts.tool_context import ToolExecutionContext
from bot.llm.port import ToolCall
from bot.loop.calls import opens_while_calling
from bot.tools.registry import CHANGES, EFFECTS, READS, SENDS, ToolStatus, tool
from persona.lines import Lines

TOOLS = load_registry(registry_paths([])).tools
REGISTRY = load_registry(registry_paths([]))


def flow() -> ApprovalFlow:
    # The gate reads only the tool, the call, the context and the card's lines.
    return ApprovalFlow(None, TOOLS, None, None, lines=Lines())  # type: ignore[arg-type]


def test_every_built_in_tool_declares_its_effect():
    undeclared = sorted(t.name for t in TOOLS if t.does not in EFFECTS)
    assert undeclared == []
    assert {t.does for t in TOOLS} == {READS, CHANGES, SENDS}
    # Those that reach someone else are sends; what only looks is a read.
    assert {t.name for t in TOOLS if t.does == SENDS} == {
        "message_someone", "send_mail", "reply_to_mail"}
    assert {"web_fetch", "read_email", "recall_memories", "list_notes"} <= {
        t.name for t in TOOLS if t.only_reads}


def test_an_undeclared_tool_is_a_change():
    @tool
    async def mystery() -> str:
        """Does something."""
        return "done"

    assert mystery.__valet_tool__.does is None  # type: ignore[attr-defined]
    assert not mystery.__valet_tool__.only_reads  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="one of reads, changes, sends"):
        tool(does="deletes")


CHANGING = sorted(t.name for t in TOOLS if not t.only_reads and not t.is_agent)
READING = sorted(t.name for t in TOOLS if t.only_reads and not t.is_agent
                 and not t.requires_approval)


@pytest.mark.parametrize("name", CHANGING)
def test_in_a_tainted_turn_every_change_asks(name):
    found = TOOLS.get(name)
    assert found is not None
    assert asks_first(found, ToolExecutionContext(user_id="u1", untrusted_context=True))


async def test_the_gate_makes_a_card_for_a_tainted_change_its_policy_never_asks_for():
    save = TOOLS.get("save_contact")
    set_name = TOOLS.get("set_my_name")  # `approval: never`, and a change
    assert save is not None and set_name is not None
    ctx = ToolExecutionContext(user_id="u1", untrusted_context=True)
    for found, args in ((save, '{"name": "Ana", "phone": "+12125550666"}'),
                        (set_name, '{"name": "Mallory"}')):
        outcome = await flow().gate(ToolCall("c1", found.name, args), found, ctx)
        assert outcome is not None and outcome.status is ToolStatus.WAITING
        assert outcome.pause is not None
        # every argument on the card, and why it asks
        assert "Mallory" in str(outcome.pause.details) + outcome.pause.summary or \
            "+12125550666" in str(outcome.pause.details) + outcome.pause.summary
        assert Lines().approval_untrusted_reason in outcome.pause.details.values()


@pytest.mark.parametrize("name", READING)
async def test_in_a_tainted_turn_a_read_still_runs(name):
    found = TOOLS.get(name)
    assert found is not None
    ctx = ToolExecutionContext(user_id="u1", untrusted_context=True)
    assert not asks_first(found, ctx)
    assert await flow().gate(ToolCall("c1", name, "{}"), found, ctx) is None


async def test_an_untainted_change_runs_as_its_policy_says():
    save = TOOLS.get("save_contact")
    assert save is not None
    ctx = ToolExecutionContext(user_id="u1")
    assert await flow().gate(ToolCall("c1", "save_contact", '{"name": "Ana"}'), save,
                             ctx) is None


@pytest.mark.parametrize("name", sorted(REGISTRY.agents))
def test_in_a_tainted_turn_every_changing_agent_asks(name):
    spec = REGISTRY.agents[name]
    assert spec.does in EFFECTS
    tainted = spec.new_agent(ToolExecutionContext(user_id="u1", untrusted_context=True))
    clean = spec.new_agent(ToolExecutionContext(user_id="u1"))
    if spec.does != READS:
        assert spec.requires_approval(tainted)
    assert spec.requires_approval(clean) == (spec.approval == "always")


def test_forget_by_ids_always_asks():
    forget = TOOLS.get("forget")
    assert forget is not None and forget.requires_approval and forget.prepare is not None


def test_an_answer_that_opens_a_capability_and_calls_is_tainted():
    opened = ToolCall("c1", "open_capability", '{"name": "memory"}')
    forget = ToolCall("c2", "forget", '{"fact_ids": [1]}')
    assert opens_while_calling([opened, forget])
    assert not opens_while_calling([opened])
    assert not opens_while_calling([forget])
