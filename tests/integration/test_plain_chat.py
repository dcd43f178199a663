"""A plain chat does only what it needs: with no approval, task, plan, memory or summary
waiting, a "hi" runs none of the steps and stores that would read them ([house] item 5; the
number of modules is printed by `make bench` as turn_modules)."""

from __future__ import annotations

from tests.fakes.fake_openai import Reply
from tests.helpers import told
from tests.turn_modules import UNTICKED, console_chat, modules_run

# What a plain chat used to wander through although nothing waited there.
NOTHING_TO_DO = ("bot.approvals", "bot.tasks", "bot.memory.recall", "bot.memory.extract",
                 "bot.memory.summaries", "agents.tools.plan_store", "bot.gateway.prompt_edits",
                 "bot.turn.telemetry")
# Measured on the console channel (tests/turn_modules.py): 56 before the steps learnt what
# they read, 45 after; then this session's features added their own, each run on every turn
# by design: the daily budget's check (bot.budget, bot.gateway.budget), the answer read for
# dialects (bot.llm.reading, bot.llm.dialects), a sign-in link never kept once sent
# (bot.gateway.sign_in_links), the meter every message passes before it is sent (bot.meter.gate
# and its ledger, issue 44), the person's language (bot.turn.language, its guess over a person's
# first messages bot.text.language_guess, and every line said in it: persona.catalog and
# persona.speaking, issue 49); every request's cap (bot.llm.caps) and the gate that puts a
# person's turn before background work (bot.llm.person_first); a greeting offered the tools
# its conversation was offered before, so the server's prompt cache stays valid
# (bot.tools.capability_router, bot.tools.offer; issue 45); the channel contract called instead of
# probed: a sender's defaults for what its channel cannot do (bot.channel.ChannelSender's
# `ready_in`, `brevity`, issue 47). The goal is 40 (the closing note of [house] says what is
# left).
MOST_MODULES = 60


async def test_a_hi_runs_no_step_that_has_nothing_to_do(app_factory, fake_llm) -> None:
    fake_llm.responder = lambda request: Reply(content="Hello! How can I help?")
    # As a deployment runs by default: memory on, tools shown by capability.
    app = await app_factory(memory=app_factory_memory_on(), tool_exposure="capabilities",
                            **UNTICKED)
    chat = await console_chat(app)
    await chat.say("hello there")  # the first message makes the person (and their owner row)
    seen = await modules_run(chat, "hi there")
    entered = sorted(m for m in seen if m.startswith(NOTHING_TO_DO))
    assert entered == []
    assert "bot.turn.orchestrator" in seen and "bot.loop.react" in seen  # the turn ran
    assert len(seen) <= MOST_MODULES, sorted(seen)


async def test_what_waits_is_still_read(app_factory, fake_llm) -> None:
    """The same path with a plan stored: the plan's context step runs again."""
    fake_llm.responder = lambda request: Reply(content="Noted.")
    app = await app_factory(**UNTICKED)
    chat = await console_chat(app)
    await chat.say("hello there")
    owner = (await app.users.list())[0]
    from agents.tools.plan_store import PlanStep

    await app.services.stores.plans.set(owner.id, [PlanStep(step="call mom")], app.clock.now())
    seen = await modules_run(chat, "hi again")
    assert "agents.tools.plan_store" in seen
    system = told(fake_llm.requests[-1]["messages"])
    assert "call mom" in system


def app_factory_memory_on():  # memory is on by default in a deployment
    from bot.config.sections import MemorySettings

    return MemorySettings()
