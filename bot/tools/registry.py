"""Tools: `@tool` turns an async function into a `Tool` whose JSON schema comes from its type
hints and docstring; `ToolRegistry` holds them (bot.tools.calls runs one call to an outcome).

Tools are shared by every user's turn at once, so nothing per-request lives on them: what a
call needs arrives in its `ToolExecutionContext`.
"""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import Enum
from typing import Any, Protocol, get_type_hints

import pydantic

from bot.contracts.pause import Pauses
from bot.contracts.tool_context import ToolExecutionContext
from bot.llm.port import TokenUsage
from bot.llm.tool_schema import clean_schema, inline_refs, parse_docstring

# What a call of a tool does to the world (its declared effect: registry `does:` or
# `@tool(does=...)`). Only READS is harmless: a tool that declares nothing is a change, and
# once a turn holds third-party text every CHANGES or SENDS call asks first
# (bot.approvals.flow's gate; docs/security.md, "Taint").
READS, CHANGES, SENDS = "reads", "changes", "sends"
EFFECTS = (READS, CHANGES, SENDS)


class ToolStatus(Enum):
    SUCCESS = "success"
    FAILED = "failed"
    TIMEOUT = "timeout"
    DENIED = "denied"  # approval refused or expired
    SKIPPED = "skipped"  # a stop reason closed it before it ran
    INVALID = "invalid"  # unknown tool or bad arguments
    WAITING = "waiting"  # paused for the user (input or approval); see `pause`
    INTERRUPTED = "interrupted"  # started before a restart; whether it took effect is unknown
    # The tool looked and declined: nothing was done, and it says why (a read-only calendar,
    # no such note). Not a failure of the tool: the request could not be done as asked.
    REFUSED = "refused"
    # The tool may or may not have acted: a send cut off mid-way (the server may have taken
    # the mail). The person must check before it is tried again.
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class ToolOutcome:
    call_id: str
    name: str
    status: ToolStatus
    content: str
    duration_ms: int = 0
    synthetic: bool = False
    truncated_from: int | None = None
    # What a paused call leaves for the orchestrator to store (an agent or an approval).
    pause: Pauses | None = None
    # Agent-Tools report their agent's status here ("COMPLETED", "WAITING_FOR_INPUT", ...).
    result_status: str | None = None
    # A call that made LLM calls of its own (a sub-task, bot.loop.subtasks): their tokens, counted
    # in the turn's, and what it did, step by step, for the turn's trace.
    usage: TokenUsage | None = None
    trace: dict[str, Any] | None = None

    @property
    def is_error(self) -> bool:
        return self.status not in (ToolStatus.SUCCESS, ToolStatus.WAITING)

    # A tool says what happened with one of these (the loop fills in the call's id and name):
    # an approved action's outcome is read from them, never from "no exception was raised".
    @classmethod
    def done(cls, content: str) -> ToolOutcome:
        return cls("", "", ToolStatus.SUCCESS, content)

    @classmethod
    def refused(cls, content: str) -> ToolOutcome:
        return cls("", "", ToolStatus.REFUSED, content)

    @classmethod
    def failed(cls, content: str) -> ToolOutcome:
        return cls("", "", ToolStatus.FAILED, content)

    @classmethod
    def unknown(cls, content: str) -> ToolOutcome:
        return cls("", "", ToolStatus.UNKNOWN, content)

    def message(self) -> dict[str, Any]:
        """The tool-result message for the conversation."""
        return {"role": "tool", "tool_call_id": self.call_id, "content": self.content}


ToolFunction = Callable[..., Awaitable[Any]]
# A tool's check before asking (Tool.prepare): the arguments to offer, or ValueError.
Check = Callable[[dict[str, Any], ToolExecutionContext], Awaitable[dict[str, Any]]]


def decode_arguments(raw: str) -> dict[str, Any]:
    """A call's arguments as the JSON object the model wrote (empty: none), or ValueError
    with a message the LLM can act on."""
    try:
        data = json.loads(raw) if raw and raw.strip() else {}
    except json.JSONDecodeError as err:
        raise ValueError(f"arguments are not valid JSON ({err.msg} at char {err.pos}). "
                         "Call the tool again with a JSON object.") from err
    if not isinstance(data, dict):
        raise ValueError("arguments must be a JSON object")
    return data


class _Args(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="ignore")


ToolShape = tuple[dict[str, Any], type[pydantic.BaseModel]]  # (JSON schema, argument model)


@dataclass
class Tool:
    name: str
    description: str
    # The JSON schema of the arguments and the model that checks them; None: made by `shape`
    # when first needed (pydantic builds them slowly, and most tools are not needed at start).
    parameters: dict[str, Any] | None
    fn: ToolFunction
    args_model: type[pydantic.BaseModel] | None
    context_param: str | None = None
    timeout: float | None = None  # None: the loop's default for its kind
    is_agent: bool = False
    settings: Mapping[str, Any] | None = None  # from configuration; None: the context's
    progress: str = ""  # what a person is shown while it runs ("checking the weather")
    # Running it twice does no harm (it only reads): a call cut short by a crash runs again
    # when its turn is redone. Otherwise it gets an "interrupted, outcome unknown" result.
    safe_to_repeat: bool = False
    # Offered only in a triggered run (a scheduled task, an event, a condition): a person's
    # own turns never need it, and every request would carry its schema for nothing.
    triggered_only: bool = False
    # The durable record an approved call's effect waits in (an outbox row, a stored mail),
    # named by the record's `key` (bot.approvals.effects): the approval follows it there.
    effect: str | None = None
    # Risk policy from the registry, enforced in code (the loop's approval gate): the LLM
    # cannot skip it, whatever its arguments or any tool result say.
    requires_approval: bool = False
    # Asks only in a turn where third-party text is in the context (registry `approval:
    # untrusted`): quiet hours, the preferred channel, tasks, memory and contacts writes.
    approval_if_untrusted: bool = False
    # Its effect: READS, CHANGES or SENDS; None (undeclared) counts as a change.
    does: str | None = None
    # How an approved call runs, with the stored arguments (Agent-Tools skip their own
    # approval step); None: `invoke`.
    run_approved: Callable[[dict[str, Any], ToolExecutionContext], Awaitable[Any]] | None = None
    # How a call reads to the person approving it; None: the tool name and its arguments.
    summarize: Callable[[dict[str, Any]], str] | None = None
    # The same, when naming the call's object needs a look-up ("Delete the note #3 “Dentist”");
    # asked once when the approval is opened. None: `summarize`, else the generic line.
    describe: Callable[[dict[str, Any], ToolExecutionContext], Awaitable[str]] | None = None
    # The check before asking: runs before a call is offered for approval (it may look things
    # up) and returns the arguments to store, show and run, e.g. with the recipient a name
    # resolves to pinned, so what runs is what the person saw. A ValueError refuses the call
    # before anyone is asked (no card): its text is the model's result, to fix or explain
    # ("there is no note #5", "two contacts are called Ana: ask which"). Every built-in tool
    # that needs approval has one (tests/unit/test_approval_checks.py).
    prepare: Check | None = None
    # Checks edited arguments before they are offered for approval; None: `parse_arguments`.
    check_arguments: Callable[[dict[str, Any], ToolExecutionContext], dict[str, Any]] | None \
        = None
    # Makes `parameters` and `args_model` when they are None (cached: every copy of the tool
    # shares one shape).
    shape: Callable[[], ToolShape] | None = None

    @property
    def only_reads(self) -> bool:
        """Declared to change nothing: the one kind a tainted turn runs without asking."""
        return self.does == READS

    def parameters_schema(self) -> dict[str, Any]:
        """The JSON schema of the arguments (made on first use)."""
        if self.parameters is None:
            self.parameters = self._shape()[0]
        return self.parameters

    def arguments_model(self) -> type[pydantic.BaseModel]:
        """The model that checks the arguments (made on first use)."""
        if self.args_model is None:
            self.args_model = self._shape()[1]
        return self.args_model

    def _shape(self) -> ToolShape:
        if self.shape is None:
            raise TypeError(f"tool {self.name} has neither parameters nor a shape")
        return self.shape()

    def schema(self) -> dict[str, Any]:
        return {"type": "function", "function": {
            "name": self.name, "description": self.description,
            "parameters": self.parameters_schema()}}

    def parse_arguments(self, raw: str) -> dict[str, Any]:
        """Validated keyword arguments, or ValueError with a message the LLM can act on."""
        data = decode_arguments(raw)
        try:
            model = self.arguments_model().model_validate(data)
        except pydantic.ValidationError as err:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}"
                for e in err.errors())
            raise ValueError(f"invalid arguments: {problems}") from err
        return {name: getattr(model, name) for name in type(model).model_fields}

    def validated(self, arguments: dict[str, Any], ctx: ToolExecutionContext) -> dict[str, Any]:
        """The arguments checked as for a call (ValueError says what is wrong)."""
        if self.check_arguments is not None:
            return self.check_arguments(arguments, ctx)
        return self.parse_arguments(json.dumps(arguments))

    async def run_with_approval(self, arguments: dict[str, Any], ctx: ToolExecutionContext
                                ) -> Any:
        """Run an approved call: the stored arguments, never regenerated ones."""
        if self.run_approved is not None:
            return await self.run_approved(arguments, ctx.for_call(ctx.call_id, self.settings))
        return await self.invoke(self.parse_arguments(json.dumps(arguments)), ctx)

    async def invoke(self, arguments: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        if self.context_param:
            arguments = {**arguments, self.context_param: ctx.for_call(ctx.call_id, self.settings)}
        # (for_call keeps the context's settings when the tool has none of its own)
        return await self.fn(**arguments)


def tool(fn: ToolFunction | None = None, *, name: str | None = None,
         description: str | None = None, timeout: float | None = None,
         progress: str = "", safe_to_repeat: bool = False,
         describe: Callable[[dict[str, Any], ToolExecutionContext], Awaitable[str]] | None = None,
         prepare: Check | None = None, effect: str | None = None,
         triggered_only: bool = False, does: str | None = None) -> Any:
    """Mark an async function as a tool. Use bare (`@tool`) or with options.
    `safe_to_repeat=True` only for tools without side effects (they only read). `describe`:
    how a call reads on an approval card, naming what it acts on. `prepare`: the check before
    a call is offered for approval (see Tool.prepare). `effect`: the key of the record its
    approved effect settles in (Tool.effect). `triggered_only`: offered only in a triggered
    run. `does`: its effect, READS, CHANGES or SENDS (Tool.does)."""
    if does is not None and does not in EFFECTS:
        raise ValueError(f"does={does!r}: one of {', '.join(EFFECTS)}")

    def wrap(f: ToolFunction) -> ToolFunction:
        f.__valet_tool__ = replace(build_tool(  # type: ignore[attr-defined]
            f, name=name, description=description, timeout=timeout, progress=progress,
            safe_to_repeat=safe_to_repeat), describe=describe, prepare=prepare, effect=effect,
            triggered_only=triggered_only, does=does)
        return f

    return wrap(fn) if fn is not None else wrap


def build_tool(fn: ToolFunction, *, name: str | None = None, description: str | None = None,
               timeout: float | None = None, progress: str = "",
               safe_to_repeat: bool = False) -> Tool:
    if not inspect.iscoroutinefunction(fn):
        raise TypeError(f"tool {fn.__qualname__} must be an async function")
    summary, param_docs = parse_docstring(inspect.getdoc(fn) or "")
    signature = inspect.signature(fn)
    tool_name = name or fn.__name__
    # The context parameter is found by name and annotation text without resolving the
    # hints: they are resolved (and the model built) when the tool is first needed.
    context_param = next((p for p, param in signature.parameters.items()
                          if _names_context(param.annotation)), None)

    @functools.cache
    def shape() -> ToolShape:
        hints = get_type_hints(fn, include_extras=True)
        fields: dict[str, Any] = {}
        for pname, param in signature.parameters.items():
            if pname == context_param:
                continue
            if hints.get(pname) is ToolExecutionContext:
                raise TypeError(f"tool {tool_name}: {pname} is the context; name its "
                                "annotation ToolExecutionContext")
            default = ... if param.default is inspect.Parameter.empty else param.default
            fields[pname] = (hints.get(pname, Any),
                             pydantic.Field(default, description=param_docs.get(pname)))
        model = pydantic.create_model(f"{tool_name}_args", __base__=_Args, **fields)
        return clean_schema(inline_refs(model.model_json_schema())), model

    return Tool(
        name=tool_name,
        description=description or summary or tool_name.replace("_", " "),
        parameters=None, fn=fn, args_model=None, shape=shape, context_param=context_param,
        timeout=timeout, progress=progress or f"using {tool_name.replace('_', ' ')}",
        safe_to_repeat=safe_to_repeat,
    )


def _names_context(annotation: Any) -> bool:
    """An annotation that is ToolExecutionContext (the class, or its name as a string under
    `from __future__ import annotations`)."""
    if annotation is ToolExecutionContext:
        return True
    return isinstance(annotation, str) and annotation.rsplit(".", 1)[-1] == \
        ToolExecutionContext.__name__


def tools_in_module(module: Any) -> list[Tool]:
    return [obj.__valet_tool__ for obj in vars(module).values()
            if callable(obj) and hasattr(obj, "__valet_tool__")]


class ToolLookup(Protocol):
    """Tools learnt at run time (an MCP server's; see bot.tools.capabilities.ToolSource)."""

    trusted: bool  # False: its tools' names and descriptions are a third party's text

    def known(self) -> Sequence[Tool]: ...

    def get(self, name: str) -> Tool | None: ...


class ToolRegistry:
    """The tools and Agent-Tools the LLM may call, in a stable order. Tools learnt at run time
    are found through their sources: `get` finds them (the loop, approvals, the journal), but
    `names` and iteration list only the tools declared up front."""

    def __init__(self, tools: list[Tool] | None = None,
                 sources: Sequence[ToolLookup] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        self._schemas: list[dict[str, Any]] | None = None
        self._sources: list[ToolLookup] = list(sources)
        for t in tools or []:
            self.add(t)

    def add_source(self, source: ToolLookup) -> None:
        self._sources.append(source)

    @property
    def sources(self) -> tuple[ToolLookup, ...]:
        return tuple(self._sources)

    def add(self, t: Tool) -> None:
        if t.name in self._tools:
            raise ValueError(f"duplicate tool name: {t.name}")
        self._tools[t.name] = t
        self._schemas = None

    def get(self, name: str) -> Tool | None:
        found = self._tools.get(name)
        for source in self._sources if found is None else ():
            found = source.get(name)
            if found is not None:
                break
        return found

    def names(self) -> list[str]:
        return list(self._tools)

    def __len__(self) -> int:
        return len(self._tools)

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def schemas(self) -> list[dict[str, Any]]:
        """Every tool's schema; a source's once it has started (nothing is started here)."""
        if self._schemas is None:
            self._schemas = [t.schema() for t in self._tools.values()]
        learnt = [t.schema() for source in self._sources for t in source.known()]
        return self._schemas + learnt if learnt else self._schemas


def approval_gated(registry: ToolRegistry) -> Callable[[str], bool]:
    """Tools whose every call waits for an approval first (agents ask later, themselves): the
    console shows such a call's progress as waiting, not running."""
    def needs_approval(name: str) -> bool:
        tool = registry.get(name)
        return tool is not None and tool.requires_approval and not tool.is_agent

    return needs_approval
