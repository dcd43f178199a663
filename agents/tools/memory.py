"""The person in control of their memory: remember, recall, forget, forget everything.

`forget` and `forget_everything` are registered with `approval: always`
(agents/registry.yaml): forgetting is for good, so the approvals package asks the person
before either runs; `forget`'s card names each fact (its words are resolved to ids first).
"""

from __future__ import annotations

from typing import Any

from agents.services import services_of
from bot.contracts.tool_context import ToolExecutionContext
from bot.memory.facts import Kind
from bot.memory.service import MemoryService
from bot.tools.registry import CHANGES, READS, ToolOutcome, tool


def _memory(ctx: ToolExecutionContext) -> MemoryService:
    memory = services_of(ctx).memory
    if memory is None:
        raise RuntimeError("long-term memory is turned off in this installation")
    return memory


@tool(progress="remembering that", does=CHANGES)
async def remember(ctx: ToolExecutionContext, fact: str, kind: str = "fact") -> str:
    """Remember something about the user for later conversations, when they ask you to
    ("remember that my sister is Ana") or state something lasting they clearly want kept.

    Args:
        fact: The fact as a short third-person sentence, e.g. "Sister is Ana".
        kind: One of fact, preference, person, event.
    """
    stored = await _memory(ctx).learn(ctx.user_id, fact, Kind.parse(kind),
                                      source_turn=f"tool:remember:{ctx.call_id}",
                                      from_third_party=ctx.untrusted_context)
    if stored is None:
        return f"Already remembered: {fact}"
    return f"Remembered (#{stored.id}): {stored.text}"


@tool(progress="looking at what I remember", safe_to_repeat=True, does=READS)
async def recall_memories(ctx: ToolExecutionContext, about: str = "") -> str:
    """List what you remember about the user ("what do you know about me?"), or only what
    bears on a topic. Each fact has its number (#id), usable with forget.

    Args:
        about: A topic to narrow the list to; empty for everything (the newest first).
    """
    return await _memory(ctx).listing(ctx.user_id, about)


async def check_forget(arguments: dict[str, Any], ctx: ToolExecutionContext
                       ) -> dict[str, Any]:
    """Before asking: the facts meant, found now and pinned by id, so what is forgotten is
    what the card named."""
    about = str(arguments.get("about") or "")
    ids = [int(i) for i in arguments.get("fact_ids") or ()]
    if not about.strip() and not ids:
        raise ValueError("say what to forget: words in the fact, or its number")
    memory = services_of(ctx).memory
    if memory is None:
        raise ValueError("long-term memory is turned off in this installation: there is "
                         "nothing to forget. The user was not asked.")
    facts = await memory.matching(ctx.user_id, about, ids)
    if not facts:
        raise ValueError("no remembered fact matches that, so there is nothing to forget. "
                         "The user was not asked.")
    return {"about": "", "fact_ids": [f.id for f in facts]}


async def _describe_forget(arguments: dict[str, Any], ctx: ToolExecutionContext) -> str:
    memory = _memory(ctx)
    facts = await memory.matching(ctx.user_id, "", arguments.get("fact_ids") or ())
    return "Forget: " + "; ".join(f"#{f.id} {f.text}" for f in facts)


@tool(progress="forgetting that", prepare=check_forget, describe=_describe_forget,
      does=CHANGES)
async def forget(ctx: ToolExecutionContext, about: str = "",
                 fact_ids: list[int] | None = None) -> str:
    """Forget facts about the user when they ask ("forget that I live in Porto"). Give the
    fact numbers from recall_memories, or words that every fact to forget contains.

    Args:
        about: Words the facts to forget contain, e.g. "Porto".
        fact_ids: Numbers (#id) of the facts to forget.
    """
    if not about.strip() and not fact_ids:
        raise ValueError("say what to forget: words in the fact, or its number")
    memory = _memory(ctx)
    return memory.forgotten_line(await memory.forget(ctx.user_id, about, fact_ids or ()))


async def check_forget_everything(arguments: dict[str, Any], ctx: ToolExecutionContext
                                  ) -> dict[str, Any]:
    """Before asking: memory is on, and there is something to forget."""
    services = services_of(ctx)
    if services.memory is None:
        raise ValueError("long-term memory is turned off in this installation: there is "
                         "nothing to forget. The user was not asked.")
    if not await services.memory.store.open_facts(ctx.user_id, 1):
        raise ValueError("nothing is remembered about the user, so there is nothing to "
                         "forget. The user was not asked.")
    return arguments


@tool(progress="forgetting everything", prepare=check_forget_everything, does=CHANGES)
async def forget_everything(ctx: ToolExecutionContext) -> ToolOutcome:
    """Forget everything you remember about the user, when they ask for exactly that. The
    user is asked to confirm before it happens."""
    count = await _memory(ctx).forget_everything(ctx.user_id)
    return ToolOutcome.done(f"Forgotten everything I remembered about you ({count} facts).")
