"""`valet doctor`'s first look at the LLM: the model listed, one short request answered, and
what the answer shows before any reading cleans it. Every request is capped
(`llm.background_max_tokens`): a model that never stops is reported as such, not as one
that did not answer. An answer made of chat-template tokens is a wrong chat template, never
"answered"."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from bot.config import Settings
from bot.llm.openai_client import OpenAILLM
from bot.llm.port import (
    LLMAuthError,
    LLMBadRequestError,
    LLMError,
    LLMModelNotFoundError,
    LLMTimeoutError,
    short_error,
)
from bot.llm.reading import ReadingRules, read_answer
from bot.text.redact import redact_url

Say = Callable[[str], None]
READY = [{"role": "user", "content": "Reply with the single word: ready"}]
# Chat-template tokens of the common families, written as text: the server renders the
# conversation with a template whose tokens are not the model's own (llama.cpp's ChatML
# fallback for a model without one), so the model never stops and shows them.
TEMPLATE_TOKEN = re.compile(
    r"<\|im_(?:start|end)\|>|<\|(?:eot_id|start_header_id|end_header_id|endoftext)\|>"
    r"|<(?:start|end)_of_turn>|</s>")
# How the cap is named when a server refuses `max_tokens` (OpenAI's reasoning models).
CAP_FIELDS = ("max_tokens", "max_completion_tokens")


def capped_llm(settings: Settings, field: str = CAP_FIELDS[0]) -> OpenAILLM:
    """The main model as the doctor asks it: every request capped at
    `llm.background_max_tokens` (the probes are background work), in `field`."""
    llm = settings.llm
    return OpenAILLM(base_url=llm.base_url, api_key=llm.api_key_value() or "not-needed",
                     model=llm.model or "", timeout=llm.timeout_seconds,
                     extra_body={field: llm.background_max_tokens, **llm.extra_body})


def wrong_template(text: str) -> str | None:
    """The first chat-template token in `text`, if any."""
    found = TEMPLATE_TOKEN.search(text)
    return found.group(0) if found else None


async def check_llm(settings: Settings, llm: OpenAILLM, ok: Say, bad: Say,
                    note: Say) -> str | None:
    """The model is offered and answers a short request readably: the field its cap is
    taken in (CAP_FIELDS); None when it does not (the endpoint's profile is then not worth
    probing)."""
    where = redact_url(settings.llm.base_url or "OpenAI")
    model = settings.llm.model
    try:
        offered = await llm.list_models()
    except LLMAuthError:
        bad(f"LLM at {where} refused the API key: check VALET_LLM_API_KEY / OPENAI_API_KEY")
        return None
    except LLMError:
        offered = []  # not every server lists its models; the call below still tells
    if offered and model not in offered:
        bad(f"LLM at {where} does not offer the model {model!r}: set VALET_LLM_MODEL (or "
            f"llm.model) to one it lists: {some(offered)}")
        return None
    try:
        field, answer = await _ready(llm, settings.llm.background_max_tokens)
    except LLMAuthError:
        bad(f"LLM at {where} refused the API key: check VALET_LLM_API_KEY / OPENAI_API_KEY")
        return None
    except LLMModelNotFoundError:
        bad(f"LLM at {where} does not know the model {model!r}: check VALET_LLM_MODEL "
            "(or llm.model)")
        return None
    except LLMError as err:
        bad(f"LLM {model} at {where} did not answer: {why(err, settings)}")
        return None
    text, finish = _text(answer)
    token = wrong_template(text)
    if token is not None:
        bad(f"LLM {model} at {where} answers with chat-template tokens ({token!r}): wrong chat "
            "template: the server renders the conversation with a template that is not the "
            "model's (or the model has none: a base model, not an instruction-tuned one); "
            "every reply would show them. Serve it with its own template (llama.cpp: --jinja; "
            "--chat-template-file for one that has none)")
        return None
    shown = read_answer(text, [], None, ReadingRules()).content or ""  # as a person sees it
    ok(f"LLM {model} at {where} answered ({shown[:40]!r})")
    if finish == "length":
        note(f"LLM {model} did not stop within {settings.llm.background_max_tokens} tokens "
             "(llm.background_max_tokens) for a one-word answer: a model that rambles holds "
             "every turn until its cap")
    return field


async def _ready(llm: OpenAILLM, cap: int) -> tuple[str, dict[str, Any]]:
    try:
        return CAP_FIELDS[0], await llm.raw_answer(READY)
    except LLMBadRequestError as err:
        if CAP_FIELDS[0] not in str(err):
            raise
        # A server that names the cap otherwise (OpenAI's reasoning models): ask it so.
        return CAP_FIELDS[1], await llm.raw_answer(
            READY, **{CAP_FIELDS[0]: None, CAP_FIELDS[1]: cap})


def _text(answer: dict[str, Any]) -> tuple[str, str | None]:
    choices = answer.get("choices") or [{}]
    choice = choices[0] if isinstance(choices[0], dict) else {}
    message = choice.get("message") or {}
    content = message.get("content")
    return (content if isinstance(content, str) else ""), choice.get("finish_reason")


def why(err: LLMError, settings: Settings, base_url: str | None = None) -> str:
    """An error in words, without its class name: a port nobody listens on is said so (the
    client reports a refused connection as a timeout)."""
    refused = _refused_at(err, base_url if base_url is not None else settings.llm.base_url)
    if refused is not None:
        return refused
    if isinstance(err, LLMTimeoutError):
        return f"no answer within llm.timeout_seconds ({settings.llm.timeout_seconds:g} s)"
    return short_error(err)


def _refused_at(err: BaseException, base_url: str | None) -> str | None:
    cause: BaseException | None = err
    for _ in range(10):
        if cause is None:
            return None
        if isinstance(cause, ConnectionRefusedError):
            parts = urlsplit(base_url or "https://api.openai.com")
            port = parts.port or (443 if parts.scheme == "https" else 80)
            return (f"nothing listens at {parts.hostname}:{port} (connection refused): start "
                    "the LLM server, or check VALET_LLM_BASE_URL")
        cause = cause.__cause__ or cause.__context__
    return None


MODELS_SHOWN = 10  # a server may list hundreds; a few are enough to spot the right name


def some(names: list[str]) -> str:
    shown = ", ".join(sorted(names)[:MODELS_SHOWN])
    return shown + (f" (and {len(names) - MODELS_SHOWN} more)" if len(names) > MODELS_SHOWN
                    else "")
