"""Capabilities: groups of tools put in front of the model only when the conversation needs them.

The model always sees a small core (the tools no capability claims, and `open_capability`) and,
in the system prompt, one line per capability that is on. Calling `open_capability(name)` (or
calling one of a group's tools directly: it is refused, and the group opens) puts that group's
tools into the next request, so any capability is one extra LLM step away. What is open is
derived from the conversation itself (the calls in this turn and the last few stored turns),
never kept on a shared object: two users' turns never see each other's groups.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from functools import cached_property
from typing import Any, Literal, Protocol

import pydantic

from bot.contracts.tool_context import ToolExecutionContext
from bot.text.untrusted import quote_untrusted
from bot.tools.registry import READS, Tool, ToolOutcome, ToolRegistry, ToolStatus

OPEN_TOOL = "open_capability"
# A group stays open for the turn it was opened in and this many turns after it: follow-ups
# ("and tomorrow?") need no second opening, and an old topic stops costing tokens.
OPEN_FOR_TURNS = 3

Message = dict[str, Any]


class CapabilityState(Enum):
    ON = "on"
    OFF = "off"  # not configured: `detail` says what would turn it on
    FAILING = "failing"  # configured but broken: `detail` says why


@dataclass(frozen=True)
class CapabilityStatus:
    state: CapabilityState
    detail: str = ""

    @classmethod
    def on(cls, detail: str = "") -> CapabilityStatus:
        return cls(CapabilityState.ON, detail)

    @classmethod
    def off(cls, how_to_turn_on: str) -> CapabilityStatus:
        return cls(CapabilityState.OFF, how_to_turn_on)

    @classmethod
    def failing(cls, why: str) -> CapabilityStatus:
        return cls(CapabilityState.FAILING, why)


# `check` functions named in the registry: async (settings, database or None) -> status.
CapabilityCheck = Callable[[Any, Any], Awaitable[CapabilityStatus]]


class SourceUnavailable(Exception):
    """A tool source could not be started; the message says why, in words for the model."""


class ToolSource(Protocol):
    """A capability whose tools are learnt at run time (an MCP server's): nothing starts until
    the group is first opened; then its tools are known for the life of the process. Every
    tool it owns is named `prefix` + something, so a name says its group without a start."""

    prefix: str
    # False: the names, descriptions and schemas of its tools are a third party's text, and
    # a turn that offers them counts as holding untrusted text (bot.text.untrusted).
    trusted: bool

    def known(self) -> Sequence[Tool]:
        """The tools known now (empty until the first start); starts nothing."""
        ...

    def get(self, name: str) -> Tool | None:
        """The tool called `name` (one of its own), or None; starts nothing."""
        ...

    async def attach(self, settings: Any, db: Any) -> CapabilityStatus:
        """Once, at start-up: where its secrets are read from (`db`), and whether it is
        configured (its secrets present). Starts nothing."""
        ...

    async def open(self) -> Sequence[Tool]:
        """Started if it is not (SourceUnavailable when it cannot be); its tools."""
        ...

    async def close(self) -> None: ...


@dataclass(frozen=True)
class CapabilityPart:
    """Some of a capability's tools, opened on their own words (bot.tools.capability_router):
    "remind me" needs the reminder tools, not every kind of scheduled task. A tool of a part that is
    used keeps that part open, not the whole capability."""

    tools: tuple[str, ...]
    keywords: tuple[str, ...] = ()
    examples: tuple[str, ...] = ()


@dataclass(frozen=True)
class CapabilitySpec:
    """A capability as the registry declares it: its tools, how to tell whether it is on, and
    the words that name it (the router opens it before the first request)."""

    name: str
    summary: str
    tools: tuple[str, ...] = ()
    check: str | None = None  # "module:function"; None: always on
    source: ToolSource | None = None  # tools learnt when first opened (an MCP server)
    keywords: tuple[str, ...] = ()  # words that name the whole capability
    examples: tuple[str, ...] = ()  # messages that must open it (checked at load)
    parts: tuple[CapabilityPart, ...] = ()

    async def status(self, settings: Any, db: Any = None) -> CapabilityStatus:
        if self.source is not None:
            try:
                return await self.source.attach(settings, db)
            except Exception as err:  # as a broken check: failing, never a crash
                return CapabilityStatus.failing(f"{type(err).__name__}: {err}")
        if self.check is None:
            return CapabilityStatus.on()
        module_name, fn_name = self.check.split(":", 1)
        try:
            fn: CapabilityCheck = getattr(importlib.import_module(module_name), fn_name)
            return await fn(settings, db)
        except Exception as err:  # a broken check is a failing capability, never a crash
            return CapabilityStatus.failing(f"its check failed: {type(err).__name__}: {err}")


async def statuses(specs: Iterable[CapabilitySpec], settings: Any, db: Any = None
                   ) -> dict[str, CapabilityStatus]:
    return {spec.name: await spec.status(settings, db) for spec in specs}


@dataclass(frozen=True)
class ToolExposure:
    """Which tools a request carries, derived from the messages of the conversation."""

    registry: ToolRegistry
    on: Mapping[str, CapabilitySpec]  # the capabilities that are on
    off: Mapping[str, CapabilitySpec] = field(default_factory=dict)  # off or failing
    open_for_turns: int = OPEN_FOR_TURNS
    # What every request would otherwise work out again (the core, each set of open groups'
    # schemas), for the registry as it is: derived data, the same for every person.
    _memo: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)

    @cached_property
    def grouped(self) -> dict[str, str]:
        """tool name -> its capability (on or not), for the tools the registry declares."""
        return {tool: spec.name for spec in (*self.on.values(), *self.off.values())
                for tool in spec.tools}

    def group_of(self, tool_name: str) -> str | None:
        """The capability a tool belongs to; a source's tools by their prefix (known or not)."""
        group = self.grouped.get(tool_name)
        if group is None:
            for spec in (*self.on.values(), *self.off.values()):
                if spec.source is not None and tool_name.startswith(spec.source.prefix):
                    return spec.name
        return group

    def core(self, triggered: bool = True) -> list[str]:
        """The tools in no capability (`triggered`: with those only a triggered run needs)."""
        names = tuple(self.registry.names())  # a tool added to the registry counts at once
        core = self._memo.get(("core", names, triggered))
        if core is None:
            core = self._memo[("core", names, triggered)] = [
                n for n in names if self.group_of(n) is None
                and (triggered or not _triggered_only(self.registry.get(n)))]
        return list(core)

    def available(self) -> set[str]:
        """The core and the tools of every capability that is on."""
        return {name for name in self.registry.names()
                if (group := self.group_of(name)) is None or group in self.on}

    @cached_property
    def parts(self) -> dict[str, frozenset[str]]:
        """tool name -> the tools of the parts it is in (bot.tools.capability_router), for the tools
        of capabilities that declare parts."""
        found: dict[str, frozenset[str]] = {}
        for spec in (*self.on.values(), *self.off.values()):
            for part in spec.parts:
                for tool in part.tools:
                    found[tool] = found.get(tool, frozenset()) | frozenset(part.tools)
        return found

    def opened(self, messages: list[Message]) -> tuple[set[str], set[str]]:
        """(capabilities open whole, tools of parts open) in this turn and the last
        `open_for_turns`: `open_capability` opens a capability whole; a call to one of its
        tools opens the part that tool is in, or the whole capability when it has no part."""
        groups: set[str] = set()
        tools: set[str] = set()
        turns = 0
        for msg in reversed(messages):
            if msg.get("role") == "user":
                turns += 1
                if turns > self.open_for_turns:  # the messages before it are older turns
                    break
            for call in msg.get("tool_calls") or ():
                fn = call.get("function") or {}
                name = fn.get("name")
                if name == OPEN_TOOL:
                    groups.add(call_argument(fn.get("arguments"), "name"))
                elif isinstance(name, str) and (group := self.group_of(name)) is not None:
                    part = self.parts.get(name)
                    if part is None:
                        groups.add(group)
                    else:
                        tools.update(part)
        groups &= set(self.on)
        return groups, {t for t in tools if self.group_of(t) in self.on}

    def offers_untrusted(self, messages: list[Message],
                         groups: frozenset[str] = frozenset()) -> bool:
        """Whether a request made now offers tools whose names, descriptions and schemas a
        third party wrote (an open group of a source that is not trusted; `groups`: opened
        besides, by the router): such a turn counts as holding untrusted text, so tools that
        change how Valet reaches the person ask first (`approval: untrusted`)."""
        return any((source := self.on[name].source) is not None and not source.trusted
                   for name in self.open_in(messages) | (groups & set(self.on)))

    def open_in(self, messages: list[Message]) -> set[str]:
        """The capabilities open whole in this turn and the last `open_for_turns`."""
        return self.opened(messages)[0]

    async def schemas(self, messages: list[Message], groups: frozenset[str] = frozenset(),
                      tools: frozenset[str] = frozenset(), *, triggered: bool = True
                      ) -> list[dict[str, Any]]:
        """The core, the open capabilities' tools and the open parts' (`groups` and `tools`:
        opened besides, by the router; `triggered`: the core's tools only a triggered run
        needs are in). A source of an open group that is not running (the
        process restarted since it was opened) is started here; one that cannot start
        offers nothing, and a call to its tools says why."""
        whole, loose = self.opened(messages)
        opened = frozenset(whole | (groups & set(self.on)))
        for name in opened:
            source = self.on[name].source
            if source is not None and not source.known():
                try:
                    await source.open()
                except SourceUnavailable:
                    pass
        loose = {t for t in loose | tools if self.group_of(t) not in opened}
        return _schemas_for(self, opened, frozenset(loose), triggered)

    def refusal(self, tool_name: str, messages: list[Message],
                groups: frozenset[str] = frozenset(), tools: frozenset[str] = frozenset()
                ) -> str | None:
        """Why a call may not run now (its tool was not offered, or its capability is not
        on); None: it may. `groups`, `tools`: opened besides, by the router."""
        group = self.group_of(tool_name)
        if group is None:
            return None
        if group not in self.on:
            return (f"Error: {tool_name} is not available: the {group} capability is not set "
                    "up. Tell the user you cannot do this here.")
        # The call itself is in `messages` and counts as opening: look before it.
        whole, loose = self.opened(_without_last_call(messages, tool_name))
        if group in whole or group in groups or tool_name in loose or tool_name in tools:
            return None
        return (f"Error: {tool_name} is part of the {group} capability, which was not open. "
                f"It is open now: call {tool_name} again.")

    def prompt_lines(self) -> list[str]:
        """One line per capability that is on, for the system prompt (every turn's)."""
        lines = self._memo.get("prompt")
        if lines is None:
            lines = self._memo["prompt"] = [f"{spec.name} ({spec.summary})"
                                            for spec in self.on.values()]
        return list(lines)

    def open_tool(self) -> Tool | None:
        """The `open_capability` tool over the capabilities that are on (None: none are)."""
        if not self.on:
            return None
        return open_capability_tool(self.on)


def _triggered_only(tool: Tool | None) -> bool:
    return tool is not None and tool.triggered_only


def _schemas_for(exposure: ToolExposure, opened: frozenset[str], loose: frozenset[str],
                 triggered: bool) -> list[dict[str, Any]]:
    key = ("schemas", opened, loose, triggered, tuple(exposure.registry.names()))
    declared = exposure._memo.get(key)
    if declared is None:
        wanted = set(exposure.core(triggered)) | loose
        for name in opened:
            wanted.update(exposure.on[name].tools)
        declared = exposure._memo[key] = [t.schema() for t in exposure.registry
                                          if t.name in wanted]
    learnt: list[dict[str, Any]] = []
    for name in sorted(opened):  # a source's tools as it knows them now (they may change)
        source = exposure.on[name].source
        if source is not None:
            learnt += [t.schema() for t in source.known()]
    return [*declared, *learnt]


def call_argument(raw: Any, key: str) -> str:
    try:
        data = json.loads(raw) if isinstance(raw, str) else (raw or {})
        return str(data.get(key, "")) if isinstance(data, dict) else ""
    except json.JSONDecodeError:
        return ""


def _without_last_call(messages: list[Message], tool_name: str) -> list[Message]:
    """`messages` without the latest assistant message that calls `tool_name`."""
    for i in range(len(messages) - 1, -1, -1):
        calls = messages[i].get("tool_calls") or ()
        if any((c.get("function") or {}).get("name") == tool_name for c in calls):
            return messages[:i]
    return messages


def open_capability_tool(on: Mapping[str, CapabilitySpec]) -> Tool:
    names = tuple(on)
    listing = {name: spec.tools for name, spec in on.items()}
    sources = {name: spec.source for name, spec in on.items() if spec.source is not None}
    untrusted = {name for name, source in sources.items() if not source.trusted}
    choice: Any = Literal[names]  # built at run time from the capabilities that are on
    args_model = pydantic.create_model("open_capability_args", name=(choice, ...))

    async def open_capability(ctx: ToolExecutionContext, name: str) -> str | ToolOutcome:
        tools = list(listing[name])
        source = sources.get(name)
        learnt: list[str] = []
        if source is not None:  # started now, the first time it is needed
            try:
                learnt = [t.name for t in await source.open()]
            except SourceUnavailable as err:
                return ToolOutcome(ctx.call_id, OPEN_TOOL, ToolStatus.FAILED,
                                   f"Error: {name} is not available right now: {err}. Tell "
                                   "the user it cannot be reached.")
        if not tools + learnt:
            return f"{name} is open, but it offers no tools right now."
        if name in untrusted and learnt:  # names a third party chose: quoted as data
            return (f"{name} is open: {', '.join(tools + ['its tools below'])} are "
                    "available now.\n" + quote_untrusted(
                        ", ".join(learnt), note=f"the tool names below come from {name}, a "
                        "third party"))
        return f"{name} is open: {', '.join(tools + learnt)} are available now."

    return Tool(
        name=OPEN_TOOL,
        description="Make a capability's tools available (they stay for a few turns).",
        parameters={"type": "object", "properties": {
            "name": {"type": "string", "enum": list(names)}}, "required": ["name"]},
        fn=open_capability, args_model=args_model, context_param="ctx",
        progress="getting ready", safe_to_repeat=True, does=READS)


async def build_exposure(registry: ToolRegistry, specs: Mapping[str, CapabilitySpec],
                         settings: Any, db: Any = None) -> ToolExposure:
    """Check each capability once at start-up; add `open_capability` to `registry` when any
    is on. A capability that is off or failing is not offered (doctor says why)."""
    found = await statuses(specs.values(), settings, db)
    exposure = ToolExposure(
        registry, on={n: s for n, s in specs.items() if found[n].state is CapabilityState.ON},
        off={n: s for n, s in specs.items() if found[n].state is not CapabilityState.ON})
    opener = exposure.open_tool()
    if opener is not None and registry.get(OPEN_TOOL) is None:
        registry.add(opener)
    return exposure
