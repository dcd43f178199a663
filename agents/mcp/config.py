"""An `mcp:` entry of a registry file, checked at start-up.

    mcp:
      - name: github                       # the capability; its tools appear as github_<tool>
        command: [npx, -y, "@modelcontextprotocol/server-github"]   # stdio, or:
        # url: https://mcp.example.com/mcp                          # streamable HTTP
        env: {GITHUB_TOKEN: "credential:github"}      # stdio: the server's environment
        # headers: {Authorization: "Bearer ${credential:github}"}   # HTTP: request headers
        description: "Your GitHub: issues, pull requests, notifications"
        trusted: false                     # true: its read-only hints may skip the card
        timeout_seconds: 30                # per call, for every tool (default: the loop's)
        max_result_chars: 20000            # a longer result is cut (and says so)
        tools:
          search_issues: {approval: never}
          create_issue: {approval: always, timeout_seconds: 30, safe_to_repeat: false}

A value in `env` or `headers` is a reference (`env:VAR`, `credential:NAME`,
`credential:NAME.FIELD`), or text with references in it (`Bearer ${credential:github}`).
Plain text is allowed for settings that are not secret (`LOG_LEVEL: debug`); under a key that
names a secret (token, key, secret, password, auth...) it is refused: a secret is never
written in the file.
"""

from __future__ import annotations

import re
from typing import Literal

import pydantic

SERVER_NAME = r"^[a-z][a-z0-9]{0,23}$"  # short: it prefixes every tool name (64 at most)
REFERENCE = re.compile(r"\$\{((?:env|credential):[^}]*)\}")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_CREDENTIAL = re.compile(r"^[A-Za-z0-9_-]{1,64}(\.[A-Za-z0-9_-]{1,64})?$")
_SECRET_KEY = re.compile(r"token|secret|passw|key|auth|credential|cookie|session", re.I)

Approval = Literal["always", "never", "auto"]


class _Strict(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)


class ToolPolicy(_Strict):
    """What Valet does around one of a server's tools."""

    # A server is a third party: its annotations can only add caution (agents/mcp/policy.py).
    # auto: asks, unless the server is `trusted` and the tool says readOnlyHint (and not
    # destructiveHint); never: the operator's word (destructiveHint still asks); always: asks.
    approval: Approval = "auto"
    safe_to_repeat: bool = False  # a call cut short by a crash runs again when its turn is redone
    timeout_seconds: float | None = pydantic.Field(None, gt=0, le=3600)


class McpServerConfig(_Strict):
    name: str = pydantic.Field(pattern=SERVER_NAME)
    command: list[str] | None = pydantic.Field(None, min_length=1)
    url: str | None = pydantic.Field(None, pattern=r"^https?://\S+$")
    cwd: str | None = None
    env: dict[str, str] = {}
    headers: dict[str, str] = {}
    description: str = pydantic.Field(min_length=1, max_length=120)
    timeout_seconds: float | None = pydantic.Field(None, gt=0, le=3600)
    start_timeout_seconds: float = pydantic.Field(30.0, gt=0, le=600)
    max_result_chars: int = pydantic.Field(20_000, ge=500, le=400_000)  # per tool result
    tools: dict[str, ToolPolicy] = {}
    # The operator vouches for this server: a tool it marks read-only (and not destructive)
    # runs without a card, and its tool names, descriptions and schemas are not counted as
    # third-party text in the turns that offer them.
    trusted: bool = False

    @property
    def transport(self) -> str:
        return "stdio" if self.command else "http"

    @property
    def where(self) -> str:
        """Where it runs, without any secret: the command, or the URL without credentials."""
        if self.command:
            return " ".join(self.command)
        return re.sub(r"//[^/@]*@", "//", self.url or "")

    def policy(self, tool: str) -> ToolPolicy:
        return self.tools.get(tool, ToolPolicy())


def problems(config: McpServerConfig) -> list[tuple[str, str]]:
    """(key, what is wrong) for what the model alone cannot check."""
    found: list[tuple[str, str]] = []
    if not config.command and not config.url:
        found.append(("command", "a server needs `command:` (a program to run over stdio) or "
                                 "`url:` (streamable HTTP)"))
    if config.command and config.url:
        found.append(("url", "give either `command:` (stdio) or `url:` (HTTP), not both"))
    if config.headers and config.command:
        found.append(("headers", "headers are for a server reached by `url:`"))
    if config.env and config.url:
        found.append(("env", "env is for a server started by `command:` (use headers for a "
                             "server reached by `url:`)"))
    for section, values in (("env", config.env), ("headers", config.headers)):
        for key, value in values.items():
            why = value_problem(key, value)
            if why:
                found.append((f"{section}.{key}", why))
    return found


def references(value: str) -> list[str]:
    """The references in a value: the whole value (`env:X`) or each `${...}` in it."""
    if value.startswith(("env:", "credential:")):
        return [value]
    return REFERENCE.findall(value)


def value_problem(key: str, value: str) -> str | None:
    refs = references(value)
    for ref in refs:
        kind, _, name = ref.partition(":")
        pattern = _ENV_NAME if kind == "env" else _CREDENTIAL
        if not pattern.match(name):
            return f"{ref!r} is not a valid reference ({kind}:NAME)"
    if not refs and _SECRET_KEY.search(key):
        return ("a secret is never written in the file: use `env:VAR` (from the environment) "
                "or `credential:NAME` (stored with `valet credentials set NAME`)")
    return None
