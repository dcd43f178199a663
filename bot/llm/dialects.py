"""Tool calls a server left in the answer's text. A server runs a model's chat template; when
it has no tool parser for that model (or the model strays from it), the calls arrive as text
in `content` with `finish_reason: "stop"`. Each form read here is one a public server or
template writes (every case, with its source, in tests/unit/dialect_corpus/):

- `<tool_call>{"name": …, "arguments": …}</tool_call>`, one block or several, the last one
  possibly unclosed: the Hermes template, which Qwen2.5 and Qwen3 use (vLLM's hermes tool
  parser; goose #3748, omlx #2565). Inside a block, or on its own, Qwen3-Coder's
  `<function=name><parameter=k>v</parameter></function>` (vLLM's qwen3_xml parser; goose
  #6883, ollama #13093), and Llama 3.1's `<function=name>{…}</function>`.
- `[TOOL_CALLS][{"name": …, "arguments": …}]` (Mistral before tokenizer v11) and
  `[TOOL_CALLS]name{…}` / `[TOOL_CALLS]name[ARGS]{…}` (v11 and later) (vLLM's mistral parser).
- `<|python_tag|>{"name": …, "parameters": …}` with `;` between calls (Llama 3.1 and 3.2, vLLM's
  llama3_json parser), or a Python call `name(key=value)` (Llama's built-in tool form).
- A bare JSON object, objects or an array, possibly in a ```json fence, naming a tool in
  `name` (or `function.name`) with `arguments` or `parameters` (ollama #11185, qwen3; ollama
  #13519, llama3.2). Only when it is the whole answer and every name is an offered tool: a
  JSON answer that merely looks like a call is the person's answer.

Markup (the first three) is a call whatever the name, and whether or not tools were offered
(bot.llm.reading says why): the loop answers a name it does not
know with a result the model reads ("unknown tool"), as it does for structured calls. A body
that is not JSON becomes a call whose arguments are not JSON: the tool's error says so and the
model can write it again (the history sends it back with `{}`: bot.llm.port). Nothing here
guesses a name.

Whether markup is the answer at all, and taking out markup that is not, is bot.llm.markup.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from typing import Any

from bot.llm.call_fields import arguments_text
from bot.llm.call_scan import STRAY, flat, json_values
from bot.llm.quirks import Quirk

# Longer than any answer worth reading as calls: past it, the text is a text (and the reading
# stays cheap whatever the model wrote).
MAX_CALL_TEXT = 100_000


@dataclass(frozen=True)
class TextCall:
    name: str
    arguments: str  # JSON text, as the model meant it; may be invalid


@dataclass(frozen=True)
class TextCalls:
    calls: list[TextCall]
    rest: str  # the text around the calls
    quirk: str


def read_text_calls(text: str, offered: frozenset[str]) -> TextCalls | None:
    """The tool calls written in `text`, in the first form found, or None."""
    if not text or len(text) > MAX_CALL_TEXT:
        return None
    if "<tool_call>" in text:
        return _hermes(text)
    if "<function=" in text:
        return _function_tags(text)
    if "[TOOL_CALLS]" in text:
        return _mistral(text)
    if "<|python_tag|>" in text:
        return _python_tag(text)
    return _bare_json(text, offered)


# --- the forms ------------------------------------------------------------------------------


def _hermes(text: str) -> TextCalls:
    calls: list[TextCall] = []
    rest: list[str] = []
    pos = 0
    quirk = Quirk.HERMES
    while True:
        start = text.find("<tool_call>", pos)
        if start == -1:
            rest.append(text[pos:])
            break
        rest.append(text[pos:start])
        body_at = start + len("<tool_call>")
        end = text.find("</tool_call>", body_at)
        body = text[body_at:] if end == -1 else text[body_at:end]
        if body.lstrip().startswith("<function="):
            quirk = Quirk.FUNCTION_TAGS  # Qwen3-Coder's form inside the Hermes tags
        calls.extend(_calls_in_body(body))
        if end == -1:  # the last one unclosed: the answer ended inside it
            break
        pos = end + len("</tool_call>")
    return TextCalls(calls, "".join(rest), quirk)


def _calls_in_body(body: str) -> list[TextCall]:
    stripped = body.strip()
    if stripped.startswith("<function="):
        return _function_tags(stripped).calls
    objects = flat(json_values(stripped))
    if objects and all(isinstance(o, dict) for o in objects):
        found = [_call_of(o) for o in objects]
        if all(f is not None for f in found):
            return [f for f in found if f is not None]
    return [_salvaged(stripped)]


_NAME = re.compile(r'"name"\s*:\s*"([^"\\]{1,200})"')
_ARGUMENTS = re.compile(r'"(?:arguments|parameters)"\s*:\s*')


def _salvaged(body: str) -> TextCall:
    """A body that is not a JSON call: its name when one can be read, and its arguments as
    written (not JSON: the tool's error tells the model), so the call is answered, not shown."""
    name = _NAME.search(body)
    args = _ARGUMENTS.search(body)
    raw = body[args.end():].rstrip().removesuffix("}").rstrip() if args else body
    return TextCall(name.group(1) if name else "", raw)


def _function_tags(text: str) -> TextCalls:
    calls: list[TextCall] = []
    rest: list[str] = []
    pos = 0
    while True:
        start = text.find("<function=", pos)
        if start == -1:
            rest.append(text[pos:])
            break
        rest.append(text[pos:start])
        name_end = text.find(">", start)
        if name_end == -1:
            calls.append(TextCall(text[start + len("<function="):].strip(), ""))
            break
        name = text[start + len("<function="):name_end].strip()
        end = text.find("</function>", name_end)
        body = text[name_end + 1:] if end == -1 else text[name_end + 1:end]
        calls.append(TextCall(name, _function_body(body)))
        if end == -1:
            break
        pos = end + len("</function>")
    return TextCalls(calls, "".join(rest), Quirk.FUNCTION_TAGS)


def _function_body(body: str) -> str:
    stripped = body.strip()
    if stripped.startswith("{"):  # Llama 3.1: <function=name>{"arg": …}</function>
        return stripped
    params: dict[str, Any] = {}
    pos = 0
    while True:
        start = stripped.find("<parameter=", pos)
        if start == -1:
            break
        key_end = stripped.find(">", start)
        if key_end == -1:
            break
        end = stripped.find("</parameter>", key_end)
        value = stripped[key_end + 1:] if end == -1 else stripped[key_end + 1:end]
        params[stripped[start + len("<parameter="):key_end].strip()] = _parameter(value)
        if end == -1:
            break
        pos = end + len("</parameter>")
    return json.dumps(params, ensure_ascii=False)


def _parameter(value: str) -> Any:
    """A parameter's text; a JSON array or object when it is one (the tool's own validation
    turns "5" into a number where the schema asks for one)."""
    text = value.strip("\n")
    if text.strip()[:1] in ("[", "{"):
        try:
            return json.loads(text)
        except (ValueError, RecursionError):
            pass
    return text


def _mistral(text: str) -> TextCalls:
    head, *segments = text.split("[TOOL_CALLS]")
    calls: list[TextCall] = []
    for segment in segments:
        body = segment.strip()
        if not body:
            continue
        if body[0] in "[{":  # before v11: a JSON array of {"name", "arguments"}
            calls.extend(_calls_in_body(_first_json_text(body)))
            continue
        brace = body.find("{")  # v11 and later: name{…}, name[ARGS]{…}, name[CALL_ID]id[ARGS]{…}
        name_part = body if brace == -1 else body[:brace]
        name = name_part.split("[CALL_ID]")[0].replace("[ARGS]", "").strip()
        calls.append(TextCall(name, "{}" if brace == -1 else _first_json_text(body[brace:])))
    return TextCalls(calls, head, Quirk.MISTRAL)


def _first_json_text(text: str) -> str:
    """The first JSON value at the start of `text` as written (what follows it, an end token,
    is dropped), or the whole text when it does not parse."""
    try:
        _, end = json.JSONDecoder().raw_decode(text)
    except (ValueError, RecursionError):
        return text
    return text[:end]


def _python_tag(text: str) -> TextCalls:
    head, _, body = text.partition("<|python_tag|>")
    body = STRAY.sub("", body).strip()
    objects = list(json_values(body))
    if objects and all(isinstance(o, dict) and _call_of(o) for o in objects):
        return TextCalls([c for o in objects if (c := _call_of(o))], head, Quirk.PYTHON_TAG)
    return TextCalls(_python_calls(body), head, Quirk.PYTHON_TAG)


def _python_calls(body: str) -> list[TextCall]:
    """`name(key=value, …)` (or several in a list): Llama's built-in tool form."""
    try:
        tree = ast.parse(body, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return [_salvaged(body)]
    nodes = tree.elts if isinstance(tree, ast.List | ast.Tuple) else [tree]
    calls = []
    for node in nodes:
        if not isinstance(node, ast.Call):
            return [_salvaged(body)]
        func = node.func
        while isinstance(func, ast.Attribute):  # brave_search.call(…): the tool is brave_search
            func = func.value
        name = func.id if isinstance(func, ast.Name) else ""
        try:
            args = {kw.arg: ast.literal_eval(kw.value) for kw in node.keywords if kw.arg}
        except (ValueError, SyntaxError, RecursionError, MemoryError, TypeError):
            calls.append(TextCall(name, body))
            continue
        calls.append(TextCall(name, json.dumps(args, ensure_ascii=False)))
    return calls


_FENCE = re.compile(r"\A```[a-zA-Z]*\s*\n?(.*?)\n?```\Z", re.S)


def _bare_json(text: str, offered: frozenset[str]) -> TextCalls | None:
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1).strip()
    if not offered or body[:1] not in ("{", "["):
        return None
    objects = flat(json_values(body, whole=True))
    if not objects or not all(_names_an_offered_tool(o, offered) for o in objects):
        return None
    return TextCalls([c for o in objects if (c := _call_of(o))], "", Quirk.BARE_JSON)


def _names_an_offered_tool(obj: Any, offered: frozenset[str]) -> bool:
    if not isinstance(obj, dict):
        return False
    function = _function_of(obj)
    return function.get("name") in offered and (
        "arguments" in function or "parameters" in function)


def _function_of(obj: dict[str, Any]) -> dict[str, Any]:
    """The call's own fields: top level, or under `function` (OpenAI's shape, written out)."""
    inner = obj.get("function")
    return inner if isinstance(inner, dict) else obj


def _call_of(obj: dict[str, Any]) -> TextCall | None:
    function = _function_of(obj)
    name = function.get("name")
    if not isinstance(name, str):
        return None
    args = function.get("arguments", function.get("parameters", {}))
    return TextCall(name, arguments_text(args) or "{}")
