"""How an answer departed from the OpenAI wire format: the quirks the LLM port reads (each with
its words for /debug and `valet doctor`), and a server's error saying it takes no tools."""

from __future__ import annotations

import re


class Quirk:
    """How an answer departed from the OpenAI wire format (LLMResponse.quirks): the port reads
    them all; traces and `valet doctor` name them."""

    HERMES = "tool_call_tags"
    FUNCTION_TAGS = "function_tags"
    MISTRAL = "mistral_tool_calls"
    PYTHON_TAG = "python_tag"
    BARE_JSON = "json_tool_calls"
    ARGUMENTS_OBJECT = "arguments_object"
    THINK_BLOCKS = "think_blocks"
    THINK_UNOPENED = "think_unopened"
    REASONING_FIELD = "reasoning_field"
    ASKED_AGAIN = "asked_again"
    TOOLS_REFUSED = "tools_refused"
    TEMPLATE_TOKENS = "template_tokens"
    IMITATED_RESULT = "imitated_result"
    ECHOED_CALL = "echoed_call"
    CALL_IN_PROSE = "call_in_prose"


# Each quirk in words, for /debug and `valet doctor`.
DESCRIBED = {
    Quirk.HERMES: "tool calls written as text in <tool_call> blocks (a Hermes or Qwen "
                  "template served without a tool parser)",
    Quirk.FUNCTION_TAGS: "tool calls written as <function=...> tags (the Qwen3-Coder or "
                         "Llama 3.1 text form)",
    Quirk.MISTRAL: "tool calls written as text after [TOOL_CALLS] (a Mistral model served "
                   "without its tool parser)",
    Quirk.PYTHON_TAG: "tool calls written as text after <|python_tag|> (Llama 3 served "
                      "without its tool parser)",
    Quirk.BARE_JSON: "tool calls written as bare JSON in the answer",
    Quirk.ARGUMENTS_OBJECT: "tool-call arguments sent as a JSON object instead of a string",
    Quirk.THINK_BLOCKS: "thinking written in <think> blocks in the answer (no reasoning "
                        "parser)",
    Quirk.THINK_UNOPENED: "thinking written before a closing </think> with no opening tag "
                          "(the DeepSeek-R1 template)",
    Quirk.REASONING_FIELD: "thinking sent apart, in a reasoning field",
    Quirk.ASKED_AGAIN: "an empty answer, asked again",
    Quirk.TOOLS_REFUSED: "requests with tools refused: asked without them",
    Quirk.TEMPLATE_TOKENS: "chat-template tokens (<|im_end|>, <|eot_id|>, </s>...) in the "
                           "answer: the server may use the wrong chat template",
    Quirk.IMITATED_RESULT: "a tool result or call imitated in the text (<tool_response>, "
                           "JSON naming no tool): nothing ran, the person was told",
    Quirk.ECHOED_CALL: "call markup quoted from third-party text: read as text, not run",
    Quirk.CALL_IN_PROSE: "call markup inside prose: read as text, not run",
}


TEXT_CALLS = (Quirk.HERMES, Quirk.FUNCTION_TAGS, Quirk.MISTRAL, Quirk.PYTHON_TAG,
              Quirk.BARE_JSON)


# What servers answer when the model has no tool template: Ollama (400, "<model> does not
# support tools", ollama #6027), vLLM started without a tool parser (400, '"auto" tool choice
# requires --enable-auto-tool-choice and --tool-call-parser to be set'), llama.cpp without
# --jinja (500, "tools param requires --jinja flag").
_REFUSES_TOOLS = re.compile(
    r"does not support tools|tool choice requires --enable-auto-tool-choice"
    r"|tools param requires --jinja|tools? (?:is|are) not supported", re.IGNORECASE)


def refuses_tools(error_text: str) -> bool:
    """True when a server's error says it takes no tools with this model."""
    return bool(_REFUSES_TOOLS.search(error_text))
