"""What a registry file's entries may say, one strict model for each kind (`agents:`,
`tools:`, `capabilities:` and their parts); where an entry sits in its file; and the checks of
an agent class's name and input fields."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pydantic
import yaml

from agents.base import RESERVED_FIELD_NAMES, StandardAgent
from bot.config.problems import yaml_line

_NAME = r"^[A-Za-z][A-Za-z0-9_-]{0,63}$"


class _Strict(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid", populate_by_name=True)


class AgentEntry(_Strict):
    name: str | None = pydantic.Field(None, pattern=_NAME)
    class_: str = pydantic.Field(alias="class", pattern=r"^[\w.]+:\w+$")
    description: str | None = None
    expose_as_tool: bool = True
    approval: Literal["always", "never", "agent", "untrusted"] = "agent"
    # Its effect (bot.tools.registry.EFFECTS); none declared: a change (asks in a tainted turn).
    does: Literal["reads", "changes", "sends"] | None = None
    timeout: float | None = pydantic.Field(None, gt=0)
    max_instances: int | None = pydantic.Field(None, ge=1)
    safe_to_repeat: bool = False
    settings: dict[str, Any] = {}
    capability: str | None = pydantic.Field(None, pattern=_NAME)


_KEYWORD = pydantic.constr(min_length=1, max_length=80)


class _PartEntry(_Strict):
    tools: list[str] = pydantic.Field(min_length=1)
    keywords: list[_KEYWORD] = []  # type: ignore[valid-type]
    examples: list[str] = []


class CapabilityEntry(_Strict):
    name: str = pydantic.Field(pattern=_NAME)
    # None: the entry adds words to a capability declared elsewhere (a deployment's file
    # extending a built-in one); it then has nothing but `keywords`, `examples` and `parts`.
    summary: str | None = pydantic.Field(None, min_length=1, max_length=120)
    check: str | None = pydantic.Field(None, pattern=r"^[\w.]+:\w+$")
    keywords: list[_KEYWORD] = []  # type: ignore[valid-type]
    examples: list[str] = []
    parts: list[_PartEntry] = []


class ToolEntry(_Strict):
    module: str = pydantic.Field(pattern=r"^[\w.]+$")
    only: list[str] | None = None
    approval: Literal["always", "never", "untrusted"] = "never"
    # Overrides the tools' `@tool(does=...)` (bot.tools.registry.EFFECTS); None: as they declare.
    does: Literal["reads", "changes", "sends"] | None = None
    safe_to_repeat: bool | None = None  # None: as the @tool declares (default: not safe)
    settings: dict[str, Any] = {}
    capability: str | None = pydantic.Field(None, pattern=_NAME)


@dataclass(frozen=True)
class Where:
    """`file:line` of an entry, or of one of its keys: where("class")."""

    path: Path
    root: yaml.Node | None
    entry: tuple[str, ...]

    def __call__(self, *keys: str) -> str:
        return f"{self.path}:{yaml_line(self.root, (*self.entry, *keys))}"


def field_problems(cls: type[StandardAgent]) -> list[str]:
    problems = []
    for spec in cls.input_fields():
        if spec.name in RESERVED_FIELD_NAMES or spec.name.startswith("_") or \
                hasattr(pydantic.BaseModel, spec.name):
            problems.append(f"{spec.name!r}: the name is reserved")
            continue
        try:
            spec.json_schema()
            if spec.default is not None:  # the default has the field's type (no validator)
                spec.dump(spec.adapter.validate_python(spec.default))
        except Exception as err:
            first_line = (str(err).strip().splitlines() or [""])[0]
            problems.append(f"{spec.name!r}: {type(err).__name__}: {first_line}")
    return problems


def snake_case(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()
