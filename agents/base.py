"""The agent API: `StandardAgent`, `InputField`, `AgentStatus`, `AgentResult`.

An agent is a small stateful task: it declares the facts it needs as `InputField`s, the LLM
passes what it already extracted from the conversation, the agent asks the user for what is
missing (pausing the turn), and `on_running()` does the work once everything is there:

    class NoteAgent(StandardAgent):
        \"\"\"Save a note for the user.\"\"\"
        body = InputField(str, "The text of the note", prompt="note_ask_body")

        async def on_running(self) -> AgentResult:
            ...
            return self.make_result(f"Saved: {self.body}")

Everything an agent keeps while it waits (collected fields, `self.state`) must be plain JSON
data: a paused agent is a database row, restored in another process after a restart.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar

import pydantic

from bot.contracts.tool_context import ToolExecutionContext
from bot.llm.tool_schema import clean_schema
from persona.catalog import said_label, say
from persona.lines import Lines

RESERVED_FIELD_NAMES = frozenset({"task_instruction", "ctx"})


class AgentStatus(StrEnum):
    INITIALIZING = "INITIALIZING"
    WAITING_FOR_INPUT = "WAITING_FOR_INPUT"
    WAITING_FOR_APPROVAL = "WAITING_FOR_APPROVAL"
    RUNNING = "RUNNING"
    COMPLETED = "COMPLETED"
    ERROR = "ERROR"
    CANCELLED = "CANCELLED"


# A validator returns None (or True) when the value is fine, else the problem: a message, or
# False (then `validator_description` is the message).
Validator = Callable[[Any], "str | bool | None"]


class InputField:
    """One fact an agent needs. Declared as a class attribute; read back as `self.<name>`."""

    def __init__(self, type: Any = str, description: str = "", *, required: bool = True,
                 default: Any = None, validator: Validator | None = None,
                 validator_description: str = "", prompt: str | None = None) -> None:
        self.type = type
        self.description = description
        self.required = required
        self.default = default
        self.validator = validator
        self.validator_description = validator_description
        self.prompt = prompt
        self.name = ""
        self._adapter: pydantic.TypeAdapter[Any] | None = None

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        if instance is None:
            return self
        return instance.fields.get(self.name, self.default)

    def __repr__(self) -> str:
        return f"InputField({self.name}: {_type_name(self.type)})"

    @property
    def adapter(self) -> pydantic.TypeAdapter[Any]:
        if self._adapter is None:
            self._adapter = pydantic.TypeAdapter(self.type)
        return self._adapter

    def json_schema(self) -> dict[str, Any]:
        """The parameter schema the LLM sees for this field."""
        schema = clean_schema(self.adapter.json_schema())
        description = self.description or self.name.replace("_", " ")
        if self.validator_description:
            description = f"{description} ({self.validator_description})"
        if self.required:
            description = f"{description.rstrip('.')}. Required: if the user hasn't said it, " \
                          "leave it out; they'll be asked."
        schema["description"] = description
        return schema

    def coerce(self, value: Any) -> Any:
        """The value as this field's type, then checked by the validator; ValueError says why
        not, in words the user can act on."""
        try:
            value = self.adapter.validate_python(value)
        except pydantic.ValidationError as err:
            raise ValueError(_type_problem(self.type, err)) from None
        if self.validator is not None:
            verdict = self.validator(value)
            if verdict is False:
                raise ValueError(self.validator_description or say("agent_not_valid"))
            if isinstance(verdict, str) and verdict:
                raise ValueError(verdict)
        return value

    def dump(self, value: Any) -> Any:
        """JSON data for storage."""
        return self.adapter.dump_python(value, mode="json")

    def load(self, data: Any) -> Any:
        return self.adapter.validate_python(data)

    def question(self) -> str:
        """What the user is asked when this field is missing."""
        if self.prompt:  # a line of the persona's (persona/lines_agents.py) by its key
            return say(self.prompt) if self.prompt in Lines.model_fields else self.prompt
        text = re.split(r"\s*(?:\(|e\.g\.|\. )", self.description or self.name, maxsplit=1)[0]
        text = text.strip().rstrip(".:;")
        if not text:
            text = self.name.replace("_", " ")
        if not (len(text) > 1 and text[1].isupper()):
            text = text[0].lower() + text[1:]
        if not re.match(r"(the|a|an|your|my|which|what)\b", text):
            text = f"the {text}"
        return say("agent_ask_field", field=text)

    def signature(self) -> list[Any]:
        """What schema_version covers: name, type and whether it is required."""
        return [self.name, _type_name(self.type), self.required]


def _type_name(tp: Any) -> str:
    return tp.__name__ if isinstance(tp, type) else repr(tp)


def _type_problem(tp: Any, err: pydantic.ValidationError) -> str:
    needs = {int: "agent_needs_whole_number", float: "agent_needs_number",
             bool: "agent_needs_yes_or_no", str: "agent_needs_text"}
    if tp in needs:
        return say(needs[tp])
    return err.errors()[0]["msg"]


@dataclass
class AgentResult:
    """What a finished agent reports: text for the LLM, plus optional structured data."""

    text: str
    data: dict[str, Any] = field(default_factory=dict)

    def render(self) -> str:
        if not self.data:
            return self.text
        return f"{self.text}\n{json.dumps(self.data, ensure_ascii=False, default=str)}"


class StandardAgent:
    """Base class of all agents. The class docstring is the description the LLM reads."""

    _input_specs: ClassVar[list[InputField]] = []
    # How the user hears about this task in notices ("I've cancelled the note").
    label: ClassVar[str] = ""
    _auto_label: ClassVar[bool] = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        specs: dict[str, InputField] = {}
        for klass in reversed(cls.__mro__):
            for name, value in vars(klass).items():
                if isinstance(value, InputField):
                    specs.pop(name, None)
                    specs[name] = value
        cls._input_specs = list(specs.values())
        if cls.__dict__.get("label"):
            cls._auto_label = False
        elif cls._auto_label:  # derived from the class name unless a base class set one
            cls.label = re.sub(r"(?<!^)(?=[A-Z])", " ", cls.__name__.removesuffix("Agent")
                               ).lower() or "task"

    def __init__(self, *, context: ToolExecutionContext, settings: Mapping[str, Any] | None = None,
                 task_instruction: str = "") -> None:
        self.context = context
        self.settings: dict[str, Any] = dict(settings or {})
        self.task_instruction = task_instruction
        self.status = AgentStatus.INITIALIZING
        self.fields: dict[str, Any] = {}  # collected, validated values
        self.state: dict[str, Any] = {}  # the agent's own JSON data, kept while it waits

    # --- what subclasses override -------------------------------------------------------------

    def needs_approval(self) -> bool:
        """Whether the user must confirm before `on_running` (used with `approval: agent`)."""
        return False

    def approval_summary(self) -> str:
        """One line saying what will happen, for the person approving it."""
        shown = ", ".join(f"{f.name.replace('_', ' ')}: {self.fields.get(f.name)}"
                          for f in self.input_fields() if self.fields.get(f.name) is not None)
        label = said_label(self.label)
        return label[:1].upper() + label[1:] + (f" ({shown})" if shown else "")

    def question_for(self, spec: InputField, problem: str | None = None,
                     given: Any = None) -> str:
        """The question asked when `spec` is missing (or was given as something unusable)."""
        if problem:
            return say("agent_cannot_use", given=given, problem=problem,
                       question=spec.question())
        return spec.question()

    async def on_running(self) -> AgentResult | Any:
        """Do the work. Every required field is set. Return `self.make_result(...)` (or any
        value, rendered as text); raise to report failure."""
        raise NotImplementedError

    # --- helpers ------------------------------------------------------------------------------

    def make_result(self, text: str, **data: Any) -> AgentResult:
        return AgentResult(text, data)

    @classmethod
    def input_fields(cls) -> list[InputField]:
        return list(cls._input_specs)

    @classmethod
    def description(cls) -> str:
        doc = (cls.__doc__ or "").strip()
        return " ".join(doc.split("\n\n", 1)[0].split()) or cls.__name__

    @classmethod
    def schema_version(cls) -> str:
        """A hash of the InputFields: changes when one is added, removed, renamed, retyped or
        made (not) required. A paused agent with another version is not restored."""
        signature = json.dumps([f.signature() for f in cls.input_fields()])
        return hashlib.sha256(signature.encode()).hexdigest()[:16]

    @classmethod
    def overrides_needs_approval(cls) -> bool:
        return cls.needs_approval is not StandardAgent.needs_approval

    def clean(self, spec: InputField, value: Any) -> Any:
        """Type, validator, then the agent's `clean_<name>(value)` hook if it has one (for
        checks that need the context, such as the user's timezone). ValueError: unusable."""
        if isinstance(value, str):
            value = value.strip()
        if value is None or value == "":
            raise ValueError(say("agent_nothing_given"))
        value = spec.coerce(value)
        hook = getattr(self, f"clean_{spec.name}", None)
        return hook(value) if callable(hook) else value

    @classmethod
    def is_free_text(cls, spec: InputField) -> bool:
        """A plain text field: any message would pass its checks, so a reply cannot be told
        apart from an unrelated message by checking it."""
        return spec.type is str and spec.validator is None and \
            not callable(getattr(cls, f"clean_{spec.name}", None))
