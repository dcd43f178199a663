"""What an endpoint does, found with one tiny request (`valet doctor`, `valet onboard`): a
streamed question offering one harmless tool (it is never run), read by the port like any
answer. From its quirks: whether the model calls tools natively, writes them as text, or does
not call them at all (or the server refuses tools); whether it thinks aloud and how; whether
streaming works; the context length the server reports for the model, if it does; and the
request field a cap on the answer's length goes in (bot.llm.caps): every probe request is
capped, so a model that never stops cannot hold the probe until the timeout."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from bot.llm.caps import CAP_FIELDS, OutputCaps, background_work
from bot.llm.openai_client import OpenAILLM
from bot.llm.port import LLMError, LLMResponse, short_error
from bot.llm.quirks import TEXT_CALLS, Quirk

log = logging.getLogger(__name__)

PROBE_TOOL: dict[str, Any] = {"type": "function", "function": {
    "name": "multiply", "description": "Multiply two whole numbers and return the product.",
    "parameters": {"type": "object", "properties": {
        "a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}}}
PROBE_MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": "You answer by calling the multiply tool."},
    {"role": "user", "content": "What is 6 times 7? Call the multiply tool to work it out."}]

NATIVE, TEXT, NONE, REFUSED = "native", "text", "none", "refused"
THINKING = (Quirk.THINK_UNOPENED, Quirk.THINK_BLOCKS, Quirk.REASONING_FIELD)


@dataclass(frozen=True)
class EndpointProfile:
    tools: str  # NATIVE, TEXT (in `text_form`), NONE (answered without a call), REFUSED
    text_form: str | None = None  # the Quirk of the text form
    thinking: str | None = None  # the Quirk of how it thinks aloud, if it does
    streaming: bool = True
    stream_error: str | None = None  # why streaming failed (the probe then asked whole)
    context_length: int | None = None
    context_source: str | None = None  # the field that said it
    quirks: tuple[str, ...] = ()
    # The request field the server honours a cap in (max_tokens, max_completion_tokens,
    # n_predict); None: none was seen to cut an answer (a model that stopped by itself).
    cap_field: str | None = None


async def probe_endpoint(llm: OpenAILLM) -> EndpointProfile:
    """One streamed request (and, only if streaming fails, the same one whole). LLMError
    when the endpoint answers neither way."""
    streaming, stream_error = True, None
    if llm.caps is None:  # a probe is background work: capped like one
        llm.caps = OutputCaps()
    with background_work():
        try:
            response = await llm.complete(PROBE_MESSAGES, [PROBE_TOOL], on_text=_ignore)
        except LLMError as err:
            streaming, stream_error = False, short_error(err)  # the server's words
            response = await llm.complete(PROBE_MESSAGES, [PROBE_TOOL])
    length, source = await context_length(llm)
    cap = await learn_cap_field(llm)
    return EndpointProfile(
        tools=_tools(response), text_form=next((q for q in response.quirks
                                                if q in TEXT_CALLS), None),
        thinking=next((q for q in THINKING if q in response.quirks), None),
        streaming=streaming, stream_error=stream_error, context_length=length,
        context_source=source, quirks=response.quirks, cap_field=cap)


# A request no model finishes within PROBE_CAP tokens: an answer that stops there was cut.
CAP_PROBE: list[dict[str, Any]] = [
    {"role": "user", "content": "Count from 1 to 100 in words, one number per line."}]
PROBE_CAP = 8


async def learn_cap_field(llm: OpenAILLM) -> str | None:
    """The field the server honours a cap in, tried in turn from the one `llm` sends now: a
    field the server refuses is replaced by the client itself (bot.llm.openai_client); one
    it ignores (the answer runs past the cap) is followed by the next. `llm` keeps the field
    found. None when no answer was cut at the cap (a model that stopped by itself first
    tells nothing: the field in use stays)."""
    caps, first = llm.caps, llm.cap_field
    llm.caps = OutputCaps(PROBE_CAP, PROBE_CAP)
    order = [first, *(f for f in CAP_FIELDS if f != first)]
    try:
        for field in order:
            llm.cap_field = field
            try:
                answer = await llm.complete(CAP_PROBE, None)
            except LLMError as err:
                log.debug("the cap probe in %s failed: %s", field, err)
                continue
            if answer.finish_reason == "length" and answer.usage.output_tokens <= PROBE_CAP:
                return llm.cap_field  # cut at the cap (in the field the client ended on)
            if answer.finish_reason != "length" and answer.usage.output_tokens <= PROBE_CAP:
                llm.cap_field = first
                return None  # stopped by itself, under the cap: nothing learnt
        llm.cap_field = first
        return None
    finally:
        llm.caps = caps


async def _ignore(chunk: str) -> None:
    return None


def _tools(response: LLMResponse) -> str:
    if Quirk.TOOLS_REFUSED in response.quirks:
        return REFUSED
    if not response.tool_calls:
        return NONE
    return TEXT if any(q in TEXT_CALLS for q in response.quirks) else NATIVE


# Where servers put a model's context length in their /v1/models entry: vLLM
# (max_model_len), llama.cpp (meta.n_ctx, the loaded size, before meta.n_ctx_train), LM Studio
# (loaded_context_length, max_context_length), OpenRouter and others (context_length).
_FIELDS = ("max_model_len", "meta.n_ctx", "loaded_context_length", "context_length",
           "max_context_length", "context_window", "meta.n_ctx_train")


async def context_length(llm: OpenAILLM) -> tuple[int | None, str | None]:
    """The context length the server reports for the model, and the field that said it;
    (None, None) when it says nothing (OpenAI does not)."""
    try:
        entries = await llm.model_entries()
    except LLMError as err:
        log.debug("no model list: %s", err)
        return None, None
    entry = next((e for e in entries if e.get("id") == llm.model), None)
    if entry is None and len(entries) == 1:
        entry = entries[0]  # a server with one model answers to any name (llama.cpp)
    for name in _FIELDS if entry else ():
        value: Any = entry
        for part in name.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value, name
    return None, None
