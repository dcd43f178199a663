"""The registry: `agents/registry.yaml` plus a deployment's own files, the one list of what
the assistant can do. Loaded and checked once at start-up; every mistake is reported with its
file, line and what is wrong, all of them at once.

    agents:
      - name: take_note                  # the tool name the LLM sees (default: from the class)
        class: agents.notes:NoteAgent    # module:Class, a StandardAgent
        description: ...                 # optional; default: the class docstring
        expose_as_tool: true             # false: loaded, but not offered to the LLM
        approval: never                  # always | never | agent (its needs_approval() decides)
                                         # | untrusted (asks when third-party text is in the turn)
        does: changes                    # its effect: reads | changes | sends; none declared
                                         # is a change (in a tainted turn every change asks)
        timeout: 60                      # seconds (default: loop.agent_tool_execution_timeout)
        max_instances: 3                 # waiting at once per user (default: the pool's limit)
        safe_to_repeat: false            # true only if running it twice does no harm (reads
                                         # only): a call cut short by a crash then runs again
        settings: {}                     # free-form, handed to the agent as self.settings
    tools:
      - module: agents.tools.clock       # registers the module's @tool functions
        only: [current_time]             # optional allow list
        approval: never                  # always: every call waits for the user's OK; untrusted:
                                         # only in a turn holding a page, a mail, an event
        does: reads                      # optional: overrides @tool(does=...) (its effect)
        safe_to_repeat: true             # optional: overrides @tool(safe_to_repeat=...)
        settings: {}                     # merged over valet.yaml tools.<module>; this wins
        capability: notes                # the group it belongs to (agents take it too); none:
                                         # a core tool, always in front of the model
    capabilities:
      - name: weather                    # a group of tools, opened by open_capability
        summary: forecasts, rain soon    # one line in the system prompt
        check: agents.tools.weather:capability_status  # optional: on / off / failing
    mcp:                                 # MCP servers: each one a capability (agents/mcp/)
      - name: github                     # its tools appear as github_<tool>
        command: [npx, -y, "@modelcontextprotocol/server-github"]  # or url: (HTTP)
        env: {GITHUB_TOKEN: "credential:github"}   # secrets by reference only
        description: "Your GitHub: issues, pull requests, notifications"
        tools: {create_issue: {approval: always, timeout_seconds: 30}}
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pydantic
import yaml

from agents.base import StandardAgent
from agents.mcp.config import McpServerConfig
from agents.mcp.config import problems as mcp_problems
from agents.registry_entries import (
    AgentEntry,
    CapabilityEntry,
    ToolEntry,
    Where,
    field_problems,
    snake_case,
)
from agents.routing import CapabilityWords, check_words
from agents.runtime import AgentSpec, AgentTasks, agent_tool
from bot.config import ConfigError
from bot.config.problems import parse_yaml, yaml_line
from bot.config.registries import BUILTIN_REGISTRY
from bot.tools.capabilities import CapabilityPart, CapabilitySpec
from bot.tools.registry import ToolRegistry, tools_in_module

if TYPE_CHECKING:
    from agents.mcp.source import McpToolSource


@dataclass
class Registry:
    agents: dict[str, AgentSpec] = field(default_factory=dict)
    tools: ToolRegistry = field(default_factory=ToolRegistry)
    files: list[str] = field(default_factory=list)
    capabilities: dict[str, CapabilitySpec] = field(default_factory=dict)

    def handler(self) -> AgentTasks:
        return AgentTasks(self.agents)

    @property
    def mcp_servers(self) -> dict[str, McpToolSource]:
        sources = {name: spec.source for name, spec in self.capabilities.items()
                   if spec.source is not None}
        if not sources:
            return {}
        from agents.mcp.source import McpToolSource  # loaded only with an `mcp:` entry

        return {name: source for name, source in sources.items()
                if isinstance(source, McpToolSource)}

    async def close(self) -> None:
        """Stop what the capabilities started (MCP servers' sessions and processes)."""
        for source in self.mcp_servers.values():
            await source.close()


def load_registry(paths: Iterable[Path], tool_settings: Mapping[str, Mapping[str, Any]]
                  | None = None) -> Registry:
    """Load and check every file; ConfigError lists each problem as `file:line: what`."""
    loader = _Loader(tool_settings or {})
    for path in paths:
        loader.load_file(Path(path))
    loader.check_capabilities()
    if loader.errors:
        raise ConfigError("agent registry: " + "\n".join(loader.errors))
    return loader.registry


class _Loader:
    def __init__(self, tool_settings: Mapping[str, Mapping[str, Any]]) -> None:
        self.tool_settings = tool_settings
        self.registry = Registry()
        self.errors: list[str] = []
        self.defined: dict[str, str] = {}  # name -> file:line where it was first defined
        self.grouped: dict[str, list[tuple[str, str]]] = {}  # capability -> [(tool, where)]
        self.mcp_where: dict[str, str] = {}  # MCP server -> file:line of its name
        self.declared: dict[str, Where] = {}  # capability -> where its entry is
        # Words added to a capability declared elsewhere, where they are.
        self.words: list[tuple[CapabilityWords, Where]] = []

    def load_file(self, path: Path) -> None:
        try:
            text = path.read_text(encoding="utf-8")
            data, root = parse_yaml(text)
            data = data or {}
        except yaml.MarkedYAMLError as err:
            mark = err.problem_mark or err.context_mark
            self.errors.append(f"{path}:{mark.line + 1 if mark else '?'}: invalid YAML: "
                               f"{err.problem or err}")
            return
        except (OSError, yaml.YAMLError) as err:
            self.errors.append(f"{path}: cannot read the registry file: {err}")
            return
        self.registry.files.append(str(path))
        if not isinstance(data, dict):
            self.errors.append(f"{path}:1: a registry file is a mapping with `agents:` and/or "
                               "`tools:` lists")
            return
        unknown = sorted(set(data) - {"agents", "tools", "capabilities", "mcp"})
        for key in unknown:
            self.errors.append(f"{path}:{yaml_line(root, (str(key),))}: {key}: unknown section "
                               "(a registry file has `agents:`, `tools:`, `capabilities:` and "
                               "`mcp:`)")
        sections: tuple[tuple[str, type[pydantic.BaseModel]], ...] = (
            ("capabilities", CapabilityEntry), ("mcp", McpServerConfig), ("tools", ToolEntry),
            ("agents", AgentEntry))
        for section, model in sections:
            entries = data.get(section) or []
            if not isinstance(entries, list):
                self.errors.append(f"{path}:{yaml_line(root, (section,))}: {section}: must be "
                                   "a list of entries")
                continue
            for i, raw in enumerate(entries):
                where = Where(path, root, (section, str(i)))
                try:
                    entry = model.model_validate(raw)
                except pydantic.ValidationError as err:
                    for problem in err.errors():
                        keys = tuple(str(p) for p in problem["loc"])
                        self.errors.append(f"{where(*keys)}: {'.'.join((section, str(i), *keys))}"
                                           f": {problem['msg']}")
                    continue
                if isinstance(entry, CapabilityEntry):
                    self._capability(entry, where)
                elif isinstance(entry, McpServerConfig):
                    self._mcp_server(entry, where)
                elif isinstance(entry, ToolEntry):
                    self._tool_module(entry, where)
                elif isinstance(entry, AgentEntry):
                    self._agent(entry, where)

    def _tool_module(self, entry: ToolEntry, where: Where) -> None:
        try:
            module = importlib.import_module(entry.module)
        except Exception as err:
            self.errors.append(f"{where('module')}: cannot import module {entry.module!r}: "
                               f"{type(err).__name__}: {err}")
            return
        found = tools_in_module(module)
        if not found:
            self.errors.append(f"{where('module')}: module {entry.module!r} has no @tool "
                               "functions")
            return
        if where.path != BUILTIN_REGISTRY:  # a deployment's tools: their types checked now
            # (the built-in ones are checked by the tests, and shaped when first needed)
            for t in found:
                if entry.only is not None and t.name not in entry.only:
                    continue
                try:
                    t.parameters_schema()
                except Exception as err:
                    self.errors.append(f"{where('module')}: {entry.module}.{t.name}: its "
                                       f"arguments cannot be described: "
                                       f"{type(err).__name__}: {err}")
                    return
        names = [t.name for t in found]
        unknown = [n for n in entry.only or () if n not in names]
        if unknown:
            self.errors.append(f"{where('only')}: no tool named {', '.join(map(repr, unknown))}"
                               f" in {entry.module} (it has: {', '.join(names)})")
            return
        short = entry.module.rsplit(".", 1)[-1]
        settings = {**self.tool_settings.get(short, {}), **entry.settings}
        for t in found:
            if entry.only is None or t.name in entry.only:
                if self._claim(t.name, where()):
                    # A copy: the decorated function's Tool is shared by every registry.
                    safe = t.safe_to_repeat if entry.safe_to_repeat is None \
                        else entry.safe_to_repeat
                    self.registry.tools.add(replace(
                        t, settings=settings, requires_approval=entry.approval == "always",
                        approval_if_untrusted=entry.approval == "untrusted",
                        safe_to_repeat=safe, does=entry.does or t.does))
                    self._group(entry.capability, t.name, where("capability"))

    def _agent(self, entry: AgentEntry, where: Where) -> None:
        cls = self._agent_class(entry.class_, where("class"))
        if cls is None:
            return
        name = entry.name or snake_case(cls.__name__)
        problems = field_problems(cls)
        if problems:
            self.errors.extend(f"{where('class')}: {entry.class_}: bad field {p}"
                               for p in problems)
            return
        if not self._claim(name, where("name") if entry.name else where()):
            return
        spec = AgentSpec(name=name, cls=cls, description=entry.description or cls.description(),
                         expose_as_tool=entry.expose_as_tool, approval=entry.approval,
                         timeout=entry.timeout, max_instances=entry.max_instances,
                         safe_to_repeat=entry.safe_to_repeat, does=entry.does,
                         settings=dict(entry.settings), where=where())
        self.registry.agents[name] = spec
        if spec.expose_as_tool:
            self.registry.tools.add(agent_tool(spec))
            self._group(entry.capability, name, where("capability"))

    def _capability(self, entry: CapabilityEntry, where: Where) -> None:
        parts = tuple(CapabilityPart(tuple(p.tools), tuple(p.keywords), tuple(p.examples))
                      for p in entry.parts)
        if entry.summary is None:  # words for a capability declared elsewhere
            if entry.check is not None:
                self.errors.append(f"{where('check')}: a capability's check goes with its "
                                   "summary, where it is declared")
                return
            self.words.append((CapabilityWords(entry.name, tuple(entry.keywords),
                                               tuple(entry.examples), parts), where))
            return
        if entry.name in self.registry.capabilities:
            self.errors.append(f"{where('name')}: duplicate capability {entry.name!r}")
            return
        self.registry.capabilities[entry.name] = CapabilitySpec(
            entry.name, entry.summary, check=entry.check, keywords=tuple(entry.keywords),
            examples=tuple(entry.examples), parts=parts)
        self.declared[entry.name] = where

    def _mcp_server(self, entry: McpServerConfig, where: Where) -> None:
        found = mcp_problems(entry)
        for key, problem in found:
            self.errors.append(f"{where(*key.split('.'))}: {'.'.join((*where.entry, key))}: "
                               f"{problem}")
        if found:
            return
        if entry.name in self.registry.capabilities:
            self.errors.append(f"{where('name')}: {'.'.join((*where.entry, 'name'))}: "
                               f"duplicate capability {entry.name!r}")
            return
        from agents.mcp.source import McpToolSource  # loaded only with an `mcp:` entry

        source = McpToolSource(entry)
        self.registry.capabilities[entry.name] = CapabilitySpec(
            entry.name, entry.description, source=source)
        self.registry.tools.add_source(source)  # its tools found by name once it runs
        self.mcp_where[entry.name] = where("name")
        self.declared[entry.name] = where

    def _group(self, capability: str | None, tool_name: str, where: str) -> None:
        if capability is not None:
            self.grouped.setdefault(capability, []).append((tool_name, where))

    def check_capabilities(self) -> None:
        """Every group named by a tool is declared (in any file), and gets its tools; no
        declared tool carries an MCP server's prefix (its tools would be taken for the
        server's)."""
        for server, where in self.mcp_where.items():
            taken = sorted(n for n in self.defined if n.startswith(f"{server}_"))
            if taken:
                self.errors.append(f"{where}: mcp name {server!r}: tools named {server}_... "
                                   f"already exist ({', '.join(taken[:3])}); choose another "
                                   "name")
            if server in self.grouped:
                self.errors.append(f"{self.grouped[server][0][1]}: capability {server!r} is "
                                   "an MCP server's: its tools come from the server")
        for name, members in self.grouped.items():
            spec = self.registry.capabilities.get(name)
            if spec is None:
                for _, where in members[:1]:
                    known = ", ".join(self.registry.capabilities) or "none declared"
                    self.errors.append(f"{where}: unknown capability {name!r} (declared: "
                                       f"{known})")
                continue
            self.registry.capabilities[name] = replace(
                spec, tools=(*spec.tools, *(tool for tool, _ in members)))
        self.errors += check_words(self.registry.capabilities, self.words, self.declared)

    def _agent_class(self, target: str, where: str) -> type[StandardAgent] | None:
        module_name, class_name = target.split(":", 1)
        try:
            module = importlib.import_module(module_name)
        except Exception as err:
            self.errors.append(f"{where}: cannot import module {module_name!r}: "
                               f"{type(err).__name__}: {err}")
            return None
        cls = getattr(module, class_name, None)
        if cls is None:
            self.errors.append(f"{where}: unknown class {class_name!r} in module {module_name}")
            return None
        if not (isinstance(cls, type) and issubclass(cls, StandardAgent)):
            self.errors.append(f"{where}: {target} is not a StandardAgent subclass")
            return None
        return cls

    def _claim(self, name: str, where: str) -> bool:
        first = self.defined.get(name)
        if first is not None:
            self.errors.append(f"{where}: duplicate name {name!r} (already defined at {first})")
            return False
        self.defined[name] = where
        return True
