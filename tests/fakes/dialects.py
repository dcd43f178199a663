"""How the fake OpenAI server writes a scripted answer in the dialect of a real server that
lacks a tool or reasoning parser (FakeOpenAI.dialect, FakeOpenAI.thinking). A test scripts
what the model means (`Reply(tool_calls=[...], reasoning=...)`); the dialect decides the
wire form, as the server would send it. Sources of each form: bot/llm/dialects.py and the
recorded answers in tests/unit/dialect_corpus/.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# Tool-call dialects: how calls are written.
CALL_DIALECTS = (
    "openai",  # structured tool_calls, arguments a JSON string
    "arguments_object",  # structured, arguments a JSON object (some servers' compat layers)
    "hermes",  # <tool_call>{"name", "arguments"}</tool_call> in content (Qwen/Hermes template)
    "qwen3_coder",  # <tool_call><function=name><parameter=k>v</parameter></function>
    "bare_json",  # {"name", "arguments"} as the whole content (ollama #11185)
    "fenced_parameters",  # ```json {"name", "parameters"} ``` (ollama #13519, llama3.2)
    "mistral",  # [TOOL_CALLS] [{"name", "arguments"}] (Mistral before tokenizer v11)
    "mistral_v11",  # [TOOL_CALLS]name{args} (v11 and later)
    "python_tag",  # <|python_tag|>{"name", "parameters"} (Llama 3.1)
)
# Reasoning dialects: where a reply's `reasoning` goes.
THINKING = (
    "field",  # reasoning_content beside the content (a server with a reasoning parser)
    "tags",  # <think>…</think> before the content (Qwen3, R1 without a reasoning parser)
    "unopened",  # …</think> before the content: the R1 template opens the tag in the prompt
)

# What servers answer to a request with tools when the model cannot take them.
REFUSALS: dict[str, tuple[int, dict[str, Any]]] = {
    "ollama": (400, {"error": {"message": "registry.ollama.ai/library/gemma3:4b does not "
                                          "support tools", "type": "api_error",
                               "param": None, "code": None}}),
    "vllm": (400, {"object": "error", "message": '"auto" tool choice requires '
                   "--enable-auto-tool-choice and --tool-call-parser to be set",
                   "type": "BadRequestError", "param": None, "code": 400}),
    "llama.cpp": (500, {"error": {"code": 500, "message": "tools param requires --jinja flag",
                                  "type": "server_error"}}),
}


@dataclass
class Wire:
    """One answer as the server sends it."""

    content: str | None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # wire shape
    reasoning: str | None = None  # reasoning_content

    @property
    def finish_reason(self) -> str:
        return "tool_calls" if self.tool_calls else "stop"


def render(content: str | None, calls: list[tuple[str, str, Any]], reasoning: str | None, *,
           dialect: str = "openai", thinking: str = "field") -> Wire:
    """`calls`: (id, name, arguments as a dict or JSON text) each."""
    if dialect not in CALL_DIALECTS or thinking not in THINKING:
        raise ValueError(f"unknown dialect {dialect!r} / thinking {thinking!r}")
    wire = _calls(content, calls, dialect)
    if reasoning and thinking == "field":
        wire.reasoning = reasoning
    elif reasoning:
        opened = "<think>\n" if thinking == "tags" else ""
        wire.content = f"{opened}{reasoning}\n</think>\n\n{wire.content or ''}"
    return wire


def _args(arguments: Any) -> Any:
    return json.loads(arguments) if isinstance(arguments, str) else arguments


def _calls(content: str | None, calls: list[tuple[str, str, Any]], dialect: str) -> Wire:
    if not calls:
        return Wire(content)
    if dialect in ("openai", "arguments_object"):
        as_object = dialect == "arguments_object"
        return Wire(content, [
            {"id": i, "type": "function", "function": {
                "name": n, "arguments": _args(a) if as_object else
                (a if isinstance(a, str) else json.dumps(a))}}
            for i, n, a in calls])
    written = _TEXT_FORMS[dialect]([(n, _args(a)) for _, n, a in calls])
    return Wire(f"{content}\n\n{written}" if content else written)


def _hermes(calls: list[tuple[str, Any]]) -> str:
    return "\n".join(f"<tool_call>\n{json.dumps({'name': n, 'arguments': a})}\n</tool_call>"
                     for n, a in calls)


def _qwen3_coder(calls: list[tuple[str, Any]]) -> str:
    def params(a: dict[str, Any]) -> str:
        return "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in a.items())
    return "\n".join(f"<tool_call>\n<function={n}>\n{params(a)}</function>\n</tool_call>"
                     for n, a in calls)


_TEXT_FORMS: dict[str, Callable[[list[tuple[str, Any]]], str]] = {
    "hermes": _hermes,
    "qwen3_coder": _qwen3_coder,
    "bare_json": lambda calls: "\n".join(json.dumps({"name": n, "arguments": a})
                                         for n, a in calls),
    "fenced_parameters": lambda calls: "```json\n" + "\n".join(
        json.dumps({"name": n, "parameters": a}) for n, a in calls) + "\n```",
    "mistral": lambda calls: "[TOOL_CALLS] " + json.dumps(
        [{"name": n, "arguments": a} for n, a in calls]),
    "mistral_v11": lambda calls: "".join(f"[TOOL_CALLS]{n}{json.dumps(a)}" for n, a in calls),
    "python_tag": lambda calls: "<|python_tag|>" + "; ".join(
        json.dumps({"name": n, "parameters": a}) for n, a in calls),
}
