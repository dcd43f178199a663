"""Agents at run time: an `AgentSpec` (one registry entry) becomes an Agent-Tool; running it
adopts the fields the LLM extracted, asks for what is missing (a paused task), confirms when
the approval policy says so, then runs `on_running()`. `AgentTasks` resumes paused tasks.

Agent-Tool schema: the InputFields become parameters (type and description; validator
descriptions appended, "(must contain @)"), plus `task_instruction`. No parameter is listed as
JSON-schema `required`: a model forced to fill a field invents a value, while a field left out
is simply asked for. Required fields say so in their description instead.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pydantic

from agents.base import AgentResult, AgentStatus, InputField, StandardAgent
from bot.contracts.approvals import ApprovalDraft, waiting_result
from bot.contracts.pause import PausedTask
from bot.contracts.tool_context import ToolExecutionContext
from bot.tasks.model import Fit, Resumed, Verdict
from bot.tools.calls import render_result
from bot.tools.registry import READS, Tool, ToolOutcome, ToolStatus

log = logging.getLogger(__name__)

APPROVAL_MARK = "[Requires user confirmation before execution]"
TASK_INSTRUCTION = (
    "What the user wants done, in a sentence, including any wishes that do not fit the other "
    "parameters, e.g. \"keep it short, it's for my manager\" or \"only if it doesn't clash "
    "with lunch\". Pass only parameter values the user actually gave (or that are certain "
    "from the conversation); anything missing is asked from the user for you.")
ASK_USER = "ask_user"


@dataclass(frozen=True)
class AgentSpec:
    """One agent entry of the registry, resolved."""

    name: str
    cls: type[StandardAgent]
    description: str
    expose_as_tool: bool = True
    # always | never | agent (the agent's needs_approval() decides) | untrusted (asks in a turn
    # whose context holds third-party text: bot.text.untrusted)
    approval: str = "agent"
    timeout: float | None = None
    max_instances: int | None = None  # waiting at once, per user
    safe_to_repeat: bool = False  # a call cut short by a crash may simply run again
    does: str | None = None  # its effect (bot.tools.registry.EFFECTS); None: a change
    settings: Mapping[str, Any] = field(default_factory=dict)
    where: str = ""  # file:line of the entry

    def advertises_approval(self) -> bool:
        return self.approval == "always" or (
            self.approval == "agent" and self.cls.overrides_needs_approval())

    def requires_approval(self, agent: StandardAgent) -> bool:
        if self.approval == "always":
            return True
        if agent.context.untrusted_context and self.does != READS:
            return True  # a tainted turn: every change asks (docs/security.md, "Taint")
        if self.approval == "never":
            return False
        if self.approval == "untrusted":
            return agent.context.untrusted_context
        return bool(agent.needs_approval())

    def new_agent(self, ctx: ToolExecutionContext, task_instruction: str = "") -> StandardAgent:
        return self.cls(context=ctx.for_call(ctx.call_id, self.settings),
                        settings=self.settings, task_instruction=task_instruction)


class _LooseArgs(pydantic.BaseModel):
    """Agent-Tool arguments are hints: anything goes through here, the agent checks them."""

    model_config = pydantic.ConfigDict(extra="ignore")


def agent_parameters(cls: type[StandardAgent]) -> dict[str, Any]:
    properties = {spec.name: spec.json_schema() for spec in cls.input_fields()}
    properties["task_instruction"] = {"type": "string", "description": TASK_INSTRUCTION}
    return {"type": "object", "properties": properties}


def agent_tool(spec: AgentSpec) -> Tool:
    """The Tool the LLM sees for an agent."""
    description = spec.description
    if spec.advertises_approval():
        description = f"{description} {APPROVAL_MARK}"
    names = [f.name for f in spec.cls.input_fields()] + ["task_instruction"]
    # dict[str, Any]: mypy infers `(Any, None)` as a value, not the type form pydantic wants
    optional_any: dict[str, Any] = {n: (Any, None) for n in names}
    model = pydantic.create_model(f"{spec.name}_args", __base__=_LooseArgs, **optional_any)

    async def run(ctx: ToolExecutionContext, **arguments: Any) -> ToolOutcome:
        return await start(spec, arguments, ctx)

    async def run_approved(arguments: dict[str, Any], ctx: ToolExecutionContext
                           ) -> ToolOutcome:
        return await start(spec, dict(arguments), ctx, approved=True)

    def check(arguments: dict[str, Any], ctx: ToolExecutionContext) -> dict[str, Any]:
        return checked_arguments(spec, arguments, ctx)

    def summarize(arguments: dict[str, Any]) -> str:
        return _loaded(spec, arguments).approval_summary()

    return Tool(name=spec.name, description=description, parameters=agent_parameters(spec.cls),
                fn=run, args_model=model, context_param="ctx", timeout=spec.timeout,
                is_agent=True, settings=spec.settings,
                progress=f"working on the {spec.cls.label}", safe_to_repeat=spec.safe_to_repeat,
                requires_approval=spec.advertises_approval(), run_approved=run_approved,
                does=spec.does,
                check_arguments=check, summarize=summarize)


def _loaded(spec: AgentSpec, arguments: dict[str, Any]) -> StandardAgent:
    """An agent holding stored (JSON) field values, for describing them."""
    agent = spec.cls(context=None, settings=spec.settings,  # type: ignore[arg-type]
                     task_instruction=str(arguments.get("task_instruction") or ""))
    specs = {f.name: f for f in agent.input_fields()}
    agent.fields = {n: specs[n].load(v) for n, v in arguments.items() if n in specs}
    return agent


def checked_arguments(spec: AgentSpec, arguments: dict[str, Any], ctx: ToolExecutionContext
                      ) -> dict[str, Any]:
    """Edited arguments, each field cleaned like the LLM's would be; ValueError lists what is
    wrong or missing."""
    agent = spec.new_agent(ctx, str(arguments.get("task_instruction") or ""))
    problems = []
    out: dict[str, Any] = {}
    for input_field in agent.input_fields():
        value = arguments.get(input_field.name)
        if value is None or (isinstance(value, str) and not value.strip()):
            if input_field.required:
                problems.append(f"{input_field.name} is missing")
            continue
        try:
            out[input_field.name] = input_field.dump(agent.clean(input_field, value))
        except ValueError as err:
            problems.append(f"{input_field.name}: {err}")
    if problems:
        raise ValueError("; ".join(problems))
    if agent.task_instruction:
        out["task_instruction"] = agent.task_instruction
    return out


# --- running ----------------------------------------------------------------------------------

Problems = dict[str, list[Any]]  # field -> [what was wrong, the value given]


async def start(spec: AgentSpec, arguments: dict[str, Any], ctx: ToolExecutionContext, *,
                approved: bool = False) -> ToolOutcome:
    """A new agent from the LLM's call: extracted values are hints. Valid ones are adopted,
    invalid ones are asked again with what was wrong, missing optional ones take defaults,
    missing required ones are asked for."""
    instruction = arguments.pop("task_instruction", None)
    agent = spec.new_agent(ctx, instruction.strip() if isinstance(instruction, str) else "")
    problems: Problems = {}
    for input_field in agent.input_fields():
        value = arguments.get(input_field.name)
        if value is None or (isinstance(value, str) and not value.strip()):
            continue
        try:
            agent.fields[input_field.name] = agent.clean(input_field, value)
        except ValueError as err:
            problems[input_field.name] = [str(err), value]
    return await advance(spec, agent, problems, approved=approved)


async def advance(spec: AgentSpec, agent: StandardAgent, problems: Problems, *,
                  approved: bool = False) -> ToolOutcome:
    for input_field in agent.input_fields():
        if input_field.name in agent.fields:
            continue
        if input_field.name in problems:
            problem, given = problems[input_field.name]
            return _ask(spec, agent, input_field, problems,
                        agent.question_for(input_field, problem, given))
        if input_field.required:
            return _ask(spec, agent, input_field, problems, agent.question_for(input_field))
    if not approved and spec.requires_approval(agent):
        return _approval_needed(spec, agent)
    return await run_agent(spec, agent)


def _approval_needed(spec: AgentSpec, agent: StandardAgent) -> ToolOutcome:
    """Every field is in and the policy wants the user's OK: an ApprovalDraft bound to
    exactly these values (the stored arguments are what runs, once approved). The details
    show every one of them, the task_instruction too: the person approves all the agent
    will receive, not only its fields."""
    agent.status = AgentStatus.WAITING_FOR_APPROVAL
    specs = {f.name: f for f in agent.input_fields()}
    arguments = {n: specs[n].dump(v) for n, v in agent.fields.items()}
    if agent.task_instruction:
        arguments["task_instruction"] = agent.task_instruction
    draft = ApprovalDraft(spec.name, agent.context.call_id, arguments,
                          agent.approval_summary(), dict(arguments))
    return ToolOutcome(agent.context.call_id, spec.name, ToolStatus.WAITING,
                       waiting_result(draft), pause=draft,
                       result_status=AgentStatus.WAITING_FOR_APPROVAL.value)


async def run_agent(spec: AgentSpec, agent: StandardAgent) -> ToolOutcome:
    call_id = agent.context.call_id
    agent.status = AgentStatus.RUNNING
    try:
        result = await agent.on_running()
    except Exception as err:  # a failing agent is a tool result, never a crash
        agent.status = AgentStatus.ERROR
        log.warning("agent %s failed: %s", spec.name, err, exc_info=True)
        return ToolOutcome(call_id, spec.name, ToolStatus.FAILED,
                           f"Error: {type(err).__name__}: {err}", result_status="ERROR")
    agent.status = AgentStatus.COMPLETED
    text = result.render() if isinstance(result, AgentResult) else render_result(result)
    return ToolOutcome(call_id, spec.name, ToolStatus.SUCCESS, text, result_status="COMPLETED")


def _ask(spec: AgentSpec, agent: StandardAgent, input_field: InputField, problems: Problems,
         question: str) -> ToolOutcome:
    agent.status = AgentStatus.WAITING_FOR_INPUT
    return _waiting(spec, agent, question, asking=input_field.name, problems=problems)


def _waiting(spec: AgentSpec, agent: StandardAgent, question: str, *, asking: str,
             problems: Problems) -> ToolOutcome:
    specs = {f.name: f for f in agent.input_fields()}
    task = PausedTask(
        kind="agent", name=spec.name, status=agent.status.value, question=question,
        label=agent.label, call_id=agent.context.call_id,
        schema_version=agent.schema_version(),
        fields={n: specs[n].dump(v) for n, v in agent.fields.items()},
        state={"asking": asking, "task_instruction": agent.task_instruction,
               "problems": {k: [str(p), str(g)] for k, (p, g) in problems.items()},
               "agent": agent.state})
    collected = ", ".join(f"{n}={v!r}" for n, v in task.fields.items()) or "nothing yet"
    content = (f"Paused: the {agent.label} is waiting for the user. They were asked: "
               f"“{question}” (collected so far: {collected}). Their next message goes to it "
               "first; do not ask again.")
    return ToolOutcome(agent.context.call_id, spec.name, ToolStatus.WAITING, content,
                       pause=task, result_status=agent.status.value)


# --- resuming ---------------------------------------------------------------------------------


class AgentTasks:
    """Restores and continues paused agents and `ask_user` questions (bot.tasks.resume's
    TaskHandler)."""

    def __init__(self, agents: Mapping[str, AgentSpec]) -> None:
        self.agents = agents

    def limit_for(self, name: str) -> int | None:
        spec = self.agents.get(name)
        return spec.max_instances if spec else None

    def check(self, task: PausedTask) -> str | None:
        if task.kind == ASK_USER:
            return None
        spec = self.agents.get(task.name)
        if spec is None or task.kind != "agent":
            return f"no agent named {task.name!r} is registered any more"
        if spec.cls.schema_version() != task.schema_version:
            return (f"schema_version mismatch: paused with {task.schema_version}, "
                    f"{spec.cls.__name__} now has {spec.cls.schema_version()}")
        return None

    def verdict(self, task: PausedTask, text: str, ctx: ToolExecutionContext) -> Verdict:
        if task.kind == ASK_USER:
            return Verdict(Fit.NEXT_MESSAGE)  # the LLM asked; what comes next is the answer
        spec, agent = self._restore(task, ctx)
        asked = _field(agent, task.state.get("asking", ""))
        if asked is None:
            return Verdict(Fit.NO)
        try:
            agent.clean(asked, text)
        except ValueError as err:
            return Verdict(Fit.INVALID, agent.question_for(asked, str(err), text))
        return Verdict(Fit.FREE if spec.cls.is_free_text(asked) else Fit.ANSWER)

    async def answer(self, task: PausedTask, text: str, ctx: ToolExecutionContext) -> Resumed:
        if task.kind == ASK_USER:
            outcome = ToolOutcome(ctx.call_id, task.name, ToolStatus.SUCCESS,
                                  f"The user answered: {text}", result_status="COMPLETED")
            return Resumed(outcome, {"question": task.question})
        spec, agent = self._restore(task, ctx)
        problems: Problems = {k: list(v) for k, v in task.state.get("problems", {}).items()}
        asked = _field(agent, task.state.get("asking", ""))
        if asked is not None:
            problems.pop(asked.name, None)
            try:
                agent.fields[asked.name] = agent.clean(asked, text)
            except ValueError as err:
                problems[asked.name] = [str(err), text]
        outcome = await advance(spec, agent, problems)
        if isinstance(outcome.pause, PausedTask):  # still waiting: the same task, asked again
            outcome.pause.id, outcome.pause.user_id = task.id, task.user_id
            outcome.pause.created_at, outcome.pause.call_id = task.created_at, task.call_id
        arguments = {f.name: f.dump(agent.fields[f.name]) for f in agent.input_fields()
                     if f.name in agent.fields}
        if agent.task_instruction:
            arguments["task_instruction"] = agent.task_instruction
        return Resumed(outcome, arguments)

    def _restore(self, task: PausedTask, ctx: ToolExecutionContext
                 ) -> tuple[AgentSpec, StandardAgent]:
        spec = self.agents[task.name]
        agent = spec.new_agent(ctx, task.state.get("task_instruction", ""))
        specs = {f.name: f for f in agent.input_fields()}
        agent.fields = {n: specs[n].load(v) for n, v in task.fields.items() if n in specs}
        agent.state = dict(task.state.get("agent") or {})
        agent.status = AgentStatus(task.status)
        return spec, agent


def _field(agent: StandardAgent, name: str) -> InputField | None:
    return next((f for f in agent.input_fields() if f.name == name), None)
