"""Sub-agents: the `delegate` tool runs a sub-task in a fresh context, so a long job ("summarise
my last 30 emails", "compare these three calendars") does not fill the person's conversation.

The sub-task gets only its task (none of the conversation), only the tools the model named
(tools or whole capabilities, never `delegate` itself: depth 1), its own step limit, token
budget and time (`loop.subtask_*`), and runs the same loop: the same approvals (its cards say
they come from a sub-task of the person's request), the same journal (its own, keyed
`<turn id>/<call id>`, so a turn redone after a crash continues the sub-task instead of
repeating it), the same fallback models. The conversation gains one tool result: the
sub-task's final answer. Its tokens count in the turn's, and its steps are in the turn's trace.

A sub-task cannot ask the person anything; an action it proposes waits for approval like any
other, and its outcome joins the person's next turn (the sub-task itself does not resume).

One turn starts at most `loop.subtask_max_per_turn` of them, `loop.subtask_concurrency` at
once, and every LLM request they make is taken from the person's rate limit
(bot.loop.subtask_llm).
Past either, the model reads a tool error that says so, and the reply says what was not done
(`short_changed`), so the person is never short-changed without a word.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from bot.config.policies import ReactLoopConfig
from bot.contracts.approvals import ApprovalDraft, waiting_result
from bot.contracts.envelopes import TurnStop
from bot.contracts.pause import each_pause
from bot.contracts.subtask_allowance import NOT_STARTED, RATE_LIMITED, SubtaskAllowance
from bot.contracts.tool_context import ToolExecutionContext
from bot.contracts.turn import Continue
from bot.llm.port import ToolCall
from bot.loop.react import react_loop
from bot.loop.state import CallGate, LoopDeps
from bot.loop.subtask_llm import OverAllowance, SubtaskLLM
from bot.loop.traces import KEPT_TEXT, shorten
from bot.loop.types import ReactLoopResult, ToolCallRecord
from bot.tools.capabilities import OPEN_TOOL, CapabilitySpec, SourceUnavailable
from bot.tools.registry import READS, Tool, ToolOutcome, ToolRegistry, ToolStatus, build_tool
from persona import FRAMEWORK_NOTES
from persona.lines import ConversationLines, fill

DELEGATE = "delegate"
TIMEOUT_MARGIN = 5.0  # seconds the tool's own timeout leaves the sub-task to say its last word

SYSTEM = """You are a helper doing one sub-task for {assistant}, a personal assistant, for the \
person it serves. Use the tools you have; you cannot ask the person anything. When you are done, \
answer with the result only: what you found or did, complete but brief. Your answer goes back \
to the assistant, not to the person.

{notes}

Current time for the person: {now}."""


class Subtasks:
    """The delegate tool and what its sub-tasks run with (the turn's loop dependencies)."""

    def __init__(self, deps: LoopDeps, cfg: ReactLoopConfig, *, assistant: str,
                 from_subtask: str, capabilities: Mapping[str, CapabilitySpec] | None = None,
                 available: set[str] | None = None) -> None:
        self.deps = deps
        self.cfg = replace(cfg, max_turns=cfg.subtask_max_turns, mode="react",
                           turn_deadline_seconds=cfg.subtask_timeout_seconds)
        self.assistant = assistant
        self.from_subtask = from_subtask  # the card's words: "(for a sub-task ...: {task})"
        self.capabilities = dict(capabilities or {})  # those that are on
        self.available = available  # tool names it may use; None: every registered tool

    def tool(self) -> Tool:
        async def delegate(ctx: ToolExecutionContext, task: str,
                           tools: tuple[str, ...] = ()) -> ToolOutcome:
            """Run a long self-contained job (e.g. summarise many emails) in a fresh context
            with only the tools named; returns just its result.

            Args:
                task: All it needs to know: it sees nothing of this chat.
                tools: Tool or capability names it may use.
            """
            return await self.run(ctx, task, list(tools))

        return replace(build_tool(delegate, progress="working on a sub-task",
                                  safe_to_repeat=True),  # its steps are journalled
                       timeout=self.cfg.subtask_timeout_seconds + TIMEOUT_MARGIN,
                       does=READS)  # itself: each step it runs passes the gate on its own

    async def run(self, ctx: ToolExecutionContext, task: str, names: list[str]) -> ToolOutcome:
        found = await self._tools(names)
        if isinstance(found, str):
            return ToolOutcome(ctx.call_id, DELEGATE, ToolStatus.INVALID, found)
        allowance = ctx.allowance or SubtaskAllowance(self.cfg.subtask_max_per_turn,
                                                   self.cfg.subtask_concurrency)
        if not allowance.start():
            return ToolOutcome(
                ctx.call_id, DELEGATE, ToolStatus.REFUSED,
                f"Not run: at most {allowance.max_subtasks} sub-tasks per request, and "
                f"{allowance.started} already ran in this one. Do what is left yourself, or "
                "tell the person plainly which parts were not done.", result_status=NOT_STARTED)
        llm = SubtaskLLM(self.deps.llm, allowance)
        deps = replace(self.deps, llm=llm, registry=ToolRegistry(found), tool_choice=None,
                       gate=self._gate(task), fallbacks=tuple(
                           replace(slot, llm=SubtaskLLM(slot.llm, allowance))
                           for slot in self.deps.fallbacks))
        system = SYSTEM.format(assistant=self.assistant, notes=FRAMEWORK_NOTES,
                               now=ctx.now().strftime("%A %d %B %Y, %H:%M"))
        # Tools a third party described (an untrusted MCP server's) make the sub-task's
        # context untrusted from its first step, as they would the turn's.
        sub_ctx = replace(ctx, turn_id="", untrusted_context=ctx.untrusted_context
                          or self._untrusted(found))
        async with allowance.slots:
            try:
                result = await react_loop(
                    deps, [{"role": "system", "content": system}],
                    [{"role": "user", "content": task}], sub_ctx, self.cfg,
                    turn_id=_journal_id(ctx), token_budget=self.cfg.subtask_token_budget)
            except OverAllowance:
                return ToolOutcome(
                    ctx.call_id, DELEGATE, ToolStatus.FAILED,
                    f"Stopped: the person's limit of {allowance.per_minute} requests a minute "
                    f"was reached after {llm.requests} steps of this sub-task, so it did not "
                    "finish. Tell the person plainly that this part was not done (they can "
                    "ask again in a minute).", result_status=RATE_LIMITED)
        return _outcome(ctx.call_id, task, [t.name for t in found], result)

    def _untrusted(self, tools: list[Tool]) -> bool:
        sources = [spec.source for spec in self.capabilities.values()
                   if spec.source is not None and not spec.source.trusted]
        return any(t.name.startswith(s.prefix) for t in tools for s in sources)

    async def _tools(self, names: list[str]) -> list[Tool] | str:
        """The tools named (a capability's name stands for all of its tools), or why not."""
        found: dict[str, Tool] = {}
        unknown = []
        for name in names:
            spec = self.capabilities.get(name)
            if spec is not None:
                for tool_name in spec.tools:
                    tool = self.deps.registry.get(tool_name)
                    if tool is not None:
                        found[tool.name] = tool
                if spec.source is not None:
                    try:
                        found.update({t.name: t for t in await spec.source.open()})
                    except SourceUnavailable as err:
                        return f"Error: {name} is not available right now: {err}."
                continue
            tool = self.deps.registry.get(name)
            if tool is None or name in (DELEGATE, OPEN_TOOL) or not self._allowed(name):
                unknown.append(name)
            else:
                found[tool.name] = tool
        if unknown:
            return (f"Error: a sub-task cannot use {', '.join(unknown)}. Name tools or "
                    f"capabilities that are available (capabilities: "
                    f"{', '.join(self.capabilities) or 'none'}).")
        return list(found.values())

    def _allowed(self, name: str) -> bool:
        if self.available is None or name in self.available:
            return True
        return any(spec.source is not None and name.startswith(spec.source.prefix)
                   for spec in self.capabilities.values())

    def _gate(self, task: str) -> CallGate | None:
        """The turn's approval gate, its cards saying they come from a sub-task."""
        gate = self.deps.gate
        if gate is None:
            return None
        where = fill(self.from_subtask, task=shorten(task, 80))

        async def gated(call: ToolCall, tool: Tool, ctx: ToolExecutionContext
                        ) -> ToolOutcome | None:
            outcome = await gate(call, tool, ctx)
            if outcome is None or not isinstance(outcome.pause, ApprovalDraft):
                return outcome
            draft = replace(outcome.pause, summary=f"{outcome.pause.summary} {where}")
            return replace(outcome, pause=draft, content=waiting_result(draft))

        return gated


def _journal_id(ctx: ToolExecutionContext) -> str | None:
    """The sub-task's own journal, under its turn's (gone with it): None without a turn."""
    return f"{ctx.turn_id}/{ctx.call_id}" if ctx.turn_id and ctx.call_id else None


def _outcome(call_id: str, task: str, tools: list[str], result: ReactLoopResult
             ) -> ToolOutcome:
    usage = result.token_usage
    trace = {"kind": "subtask", "task": shorten(task, KEPT_TEXT), "tools": tools,
             "stop": result.stop_reason.value, "input_tokens": usage.input_tokens,
             "output_tokens": usage.output_tokens, "entries": result.trace}
    if result.pauses:  # an action it proposed waits for the person's OK
        pauses = tuple(p for o in result.pauses for p in each_pause(o.pause))
        waiting = "\n".join(p.content for p in result.pauses)
        return ToolOutcome(call_id, DELEGATE, ToolStatus.WAITING,
                           f"Not finished: the sub-task waits for the person.\n{waiting}",
                           pause=pauses if len(pauses) != 1 else pauses[0],
                           result_status="WAITING_FOR_APPROVAL", usage=usage, trace=trace)
    finished = result.stop_reason is TurnStop.FINAL_ANSWER
    head = (f"Sub-task finished ({result.turns} steps, {usage.total} tokens)" if finished
            else f"Sub-task stopped ({result.stop_reason.value}) after {result.turns} steps")
    return ToolOutcome(call_id, DELEGATE, ToolStatus.SUCCESS if finished else ToolStatus.FAILED,
                       f"{head}. Its result:\n{result.response}", usage=usage, trace=trace)


def short_changed(records: list[ToolCallRecord], allowance: SubtaskAllowance | None,
                  lines: ConversationLines) -> Continue:
    """A line after the answer when the allowance stopped sub-tasks of this turn."""
    stopped = [r for r in records if r.name == DELEGATE
               and r.result_status in (NOT_STARTED, RATE_LIMITED)]
    if not stopped:
        return Continue()
    asked = sum(1 for r in records if r.name == DELEGATE)
    if any(r.result_status == RATE_LIMITED for r in stopped):
        return Continue(after=(lines.subtasks_rate_limited,))
    limit = allowance.max_subtasks if allowance is not None else asked - len(stopped)
    return Continue(after=(fill(lines.subtasks_not_all, done=asked - len(stopped),
                                asked=asked, limit=limit),))
