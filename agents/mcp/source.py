"""An MCP server as a capability (bot.tools.capabilities.ToolSource): its tools as Valet tools,
named `<server>_<tool>`, each with the approval, timeout and journal policy the registry
gives it (by default a card for every tool: a server's own hints only add caution, and skip
the card only on a server the operator marked `trusted`: agents/mcp/policy.py).

Nothing starts before the capability is first opened. A tool asked for by name before the
server has started in this process (a turn redone after a restart, an approved call run after
one) is a stand-in: it starts the server when it runs, and until then its policy is what the
registry says, else the safe one (asks first, never repeated).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pydantic

from agents.mcp.config import McpServerConfig
from agents.mcp.connection import CallInterrupted, McpConnection, McpUnavailable
from agents.mcp.policy import asks_first, declared_effect, stand_in_asks_first
from agents.mcp.results import error_text, result_text
from agents.mcp.secrets import SecretReader
from bot.contracts.tool_context import ToolExecutionContext
from bot.tools.capabilities import CapabilityStatus
from bot.tools.registry import CHANGES, Tool, ToolOutcome, ToolStatus, decode_arguments
from persona.catalog import say

if TYPE_CHECKING:
    import mcp_types

MAX_NAME = 64  # what the chat completions API accepts for a tool name
MAX_DESCRIPTION = 1000  # a server's description is not allowed to fill the prompt
DEFAULT_TIMEOUT = 30.0


class _NoArgs(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="allow")


async def _never_called(**_: Any) -> None:  # McpTool.invoke replaces the function
    raise NotImplementedError


@dataclass
class McpTool(Tool):
    """One tool of a server. Arguments are checked against the server's own JSON schema;
    the call goes to the server through the source."""

    source: McpToolSource | None = None
    remote: str = ""  # the tool's name on the server
    call_timeout: float = DEFAULT_TIMEOUT

    def parse_arguments(self, raw: str) -> dict[str, Any]:
        """The server's own schema checks them (it may be richer than Valet's models)."""
        data = decode_arguments(raw)
        problem = _schema_problem(self.parameters_schema(), data)
        if problem:
            raise ValueError(f"invalid arguments: {problem}")
        return data

    async def invoke(self, arguments: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        assert self.source is not None
        return await self.source.run(self, arguments, ctx)


class McpToolSource:
    def __init__(self, config: McpServerConfig) -> None:
        self.config = config
        self.prefix = f"{config.name}_"
        # Its tools' names, descriptions and schemas are a third party's text unless the
        # operator vouches for the server (bot.tools.capabilities.ToolExposure.offers_untrusted).
        self.trusted = config.trusted
        self.default_timeout = DEFAULT_TIMEOUT
        self._reader = SecretReader(os.environ)  # the credential store comes with attach()
        self._tools: dict[str, McpTool] = {}
        self.connection = McpConnection(config, lambda: self._reader, on_tools=self._learn)

    # --- ToolSource ---------------------------------------------------------------------------

    def known(self) -> Sequence[Tool]:
        return list(self._tools.values())

    def get(self, name: str) -> Tool | None:
        if not name.startswith(self.prefix) or len(name) == len(self.prefix):
            return None
        found = self._tools.get(name)
        if found is None and self.connection.starts == 0:
            return self._stand_in(name)
        return found

    async def attach(self, settings: Any, db: Any) -> CapabilityStatus:
        from bot.credentials import CredentialStore

        self._reader = SecretReader(
            os.environ, CredentialStore.tolerant(db, os.environ) if db is not None else None)
        data_dir = getattr(settings, "data_dir", None)
        self.connection.log_dir = data_dir() if callable(data_dir) else None
        loop_config = getattr(settings, "loop_config", None)
        if callable(loop_config):
            self.default_timeout = loop_config().tool_execution_timeout
        missing = await self._reader.missing({**self.config.env, **self.config.headers})
        if missing:
            return CapabilityStatus.off(f"provide {', '.join(missing)} for the MCP server "
                                        f"{self.config.name}")
        return CapabilityStatus.on(f"MCP server over {self.config.transport}, started when "
                                   "first used")

    async def open(self) -> Sequence[Tool]:
        await self.connection.ensure()
        return self.known()

    async def close(self) -> None:
        await self.connection.close()

    # --- running a call ---------------------------------------------------------------------

    async def run(self, tool: McpTool, arguments: dict[str, Any], ctx: ToolExecutionContext
                  ) -> ToolOutcome:
        from mcp import MCPError

        server = self.config.name
        if not tool.remote:  # a stand-in: the server starts now, then the real tool runs
            try:
                await self.open()
            except McpUnavailable as err:
                return _failed(ctx, tool, f"Error: the {server} server is not available "
                                          f"right now: {err}.")
            real = self._tools.get(tool.name)
            if real is None:
                return _failed(ctx, tool, f"Error: the {server} server has no tool called "
                                          f"{tool.name[len(self.prefix):]}.")
            if real.requires_approval and not tool.requires_approval and not ctx.approved:
                # it ran as a stand-in without a card, but the server's own hints ask for one
                return ToolOutcome(ctx.call_id, tool.name, ToolStatus.REFUSED,
                                   f"Not run: {real.name} needs the person's OK. Call it "
                                   "again to ask them.")
            tool = real
        try:
            result = await self.connection.call(tool.remote, arguments, tool.call_timeout)
        except TimeoutError:
            return ToolOutcome(ctx.call_id, tool.name, ToolStatus.TIMEOUT,
                               f"Error: {tool.name} did not finish within "
                               f"{tool.call_timeout:g} s (the {server} server was asked to "
                               "stop it; it may still have done it).")
        except CallInterrupted:
            return ToolOutcome(ctx.call_id, tool.name, ToolStatus.INTERRUPTED,
                               f"Interrupted: the {server} server stopped while "
                               f"{tool.remote} was running, so whether it took effect is "
                               "unknown (it is being restarted). Say so; do not assume it "
                               "worked.")
        except McpUnavailable as err:
            return _failed(ctx, tool, f"Error: the {server} server is not available right "
                                      f"now: {err}.")
        except MCPError as err:  # the server refused the call (unknown tool, bad arguments)
            return _failed(ctx, tool, error_text(server, tool.remote, err.message))
        text = result_text(server, tool.remote, result, self.config.max_result_chars)
        return ToolOutcome(ctx.call_id, tool.name,
                           ToolStatus.FAILED if result.is_error else ToolStatus.SUCCESS, text)

    # --- the server's tools as Valet tools --------------------------------------------------

    def _learn(self, remote_tools: list[mcp_types.Tool]) -> None:
        """A new list from the server replaces the old one whole (never edited in place)."""
        tools: dict[str, McpTool] = {}
        for remote in remote_tools:
            name = valet_name(self.prefix, remote.name, tools)
            tools[name] = self._tool(name, remote)
        self._tools = tools

    def _tool(self, name: str, remote: mcp_types.Tool) -> McpTool:
        policy = self.config.policy(remote.name)
        timeout = policy.timeout_seconds or self.config.timeout_seconds or self.default_timeout
        description = (remote.description or remote.title or remote.name).strip()
        if len(description) > MAX_DESCRIPTION:
            description = description[:MAX_DESCRIPTION] + "…"
        return McpTool(
            name=name, description=f"{description} (from the {self.config.name} MCP server)",
            parameters=_object_schema(remote.input_schema), fn=_never_called,
            args_model=_NoArgs, timeout=timeout + self.config.start_timeout_seconds,
            progress=f"asking {self.config.name}", safe_to_repeat=policy.safe_to_repeat,
            requires_approval=asks_first(self.config, policy, remote.annotations),
            does=declared_effect(self.config, policy, remote.annotations),
            summarize=self._summary(remote.name),
            source=self, remote=remote.name, call_timeout=timeout)

    def _stand_in(self, name: str) -> McpTool:
        guess = name[len(self.prefix):]
        policy = self.config.tools.get(guess)
        timeout = (policy.timeout_seconds if policy else None) or self.config.timeout_seconds \
            or self.default_timeout
        return McpTool(
            name=name, description=f"{guess} (from the {self.config.name} MCP server)",
            parameters={"type": "object"}, fn=_never_called, args_model=_NoArgs,
            timeout=timeout + self.config.start_timeout_seconds,
            progress=f"asking {self.config.name}",
            safe_to_repeat=bool(policy and policy.safe_to_repeat),
            requires_approval=stand_in_asks_first(policy), does=CHANGES,
            summarize=self._summary(guess), source=self, remote="", call_timeout=timeout)

    def _summary(self, remote: str) -> Any:
        server = self.config.name

        def summarize(arguments: Mapping[str, Any]) -> str:
            shown = ", ".join(f"{k}: {_short(v)}" for k, v in arguments.items()
                              if v is not None and v != "")
            return say("card_mcp_call", server=server, tool=remote,
                       arguments=f" ({shown})" if shown else "")

        return summarize


def valet_name(prefix: str, remote: str, taken: Mapping[str, Any]) -> str:
    """`<server>_<tool>` in the characters a tool name may have, at most 64 long, unique."""
    name = prefix + re.sub(r"[^A-Za-z0-9_-]", "_", remote)
    if len(name) > MAX_NAME or name in taken:
        digest = hashlib.sha256(remote.encode()).hexdigest()[:8]
        name = f"{name[:MAX_NAME - 9]}_{digest}"
    return name


def _object_schema(schema: Mapping[str, Any] | None) -> dict[str, Any]:
    found = dict(schema or {})
    if found.get("type") != "object":
        found = {"type": "object", "properties": {}}
    found.setdefault("properties", {})
    return found


def _schema_problem(schema: Mapping[str, Any], data: dict[str, Any]) -> str | None:
    """What is wrong with `data` for the server's schema (None: nothing, or a schema that
    cannot be read, which the server then judges)."""
    import jsonschema

    try:
        validator_cls = jsonschema.validators.validator_for(schema)
        errors = sorted(validator_cls(schema).iter_errors(data), key=lambda e: list(e.path))
    except (jsonschema.SchemaError, TypeError, ValueError):
        return None
    if not errors:
        return None
    return "; ".join(f"{'.'.join(str(p) for p in e.path) or 'arguments'}: {e.message}"
                     for e in errors[:5])


def _short(value: Any, limit: int = 80) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= limit else text[:limit] + "…"


def _failed(ctx: ToolExecutionContext, tool: Tool, text: str) -> ToolOutcome:
    return ToolOutcome(ctx.call_id, tool.name, ToolStatus.FAILED, text)
