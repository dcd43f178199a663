"""How long an answer may be: every request carries a cap on the tokens it may write, so a
model that does not stop ends there instead of holding the turn (and a one-slot server)
until the timeout. Answers get `llm.max_output_tokens`; background work (memory extraction,
summaries, briefs, probes) runs inside `background_work()` and gets
`llm.background_max_tokens`.

Servers name the cap differently: OpenAI's current models take only
`max_completion_tokens` (and refuse `max_tokens`); llama.cpp, vLLM, Ollama, LM Studio and
most others take `max_tokens`; llama.cpp's own name is `n_predict`. The field is chosen by
the endpoint's host, set by `llm.max_tokens_field`, learnt by the probe (bot.llm.probe,
`valet doctor` / `valet onboard`), and changed for good when a server refuses it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from urllib.parse import urlsplit

MAX_TOKENS, MAX_COMPLETION_TOKENS, N_PREDICT = "max_tokens", "max_completion_tokens", "n_predict"
CAP_FIELDS = (MAX_TOKENS, MAX_COMPLETION_TOKENS, N_PREDICT)

_background: ContextVar[bool] = ContextVar("valet_background_llm", default=False)


@contextmanager
def background_work() -> Iterator[None]:
    """The LLM requests made inside are background work: the small cap, and (through
    bot.llm.person_first) never before a person's turn."""
    token = _background.set(True)
    try:
        yield
    finally:
        _background.reset(token)


def in_background() -> bool:
    return _background.get()


@dataclass(frozen=True)
class OutputCaps:
    """The two caps (`llm.max_output_tokens`, `llm.background_max_tokens`)."""

    answer: int = 1024
    background: int = 384

    def now(self) -> int:
        """The cap of a request made here (in background work or not)."""
        return self.background if in_background() else self.answer


def default_field(base_url: str | None) -> str:
    """OpenAI itself (no base URL, or its host) takes `max_completion_tokens`; everything
    else `max_tokens`, the name every OpenAI-compatible server reads."""
    host = urlsplit(base_url).hostname if base_url else "api.openai.com"
    return MAX_COMPLETION_TOKENS if host == "api.openai.com" else MAX_TOKENS


# OpenAI: "Unsupported parameter: 'max_tokens' is not supported with this model. Use
# 'max_completion_tokens' instead."; vLLM and others: "extra fields not permitted",
# "Unrecognized request argument supplied: max_completion_tokens".
_USE_INSTEAD = re.compile(r"use '?(max_tokens|max_completion_tokens|n_predict)'? instead",
                          re.IGNORECASE)
_REFUSED = re.compile(r"unsupported|unrecogni[sz]ed|not supported|not permitted|unknown|"
                      r"extra (?:fields|inputs)", re.IGNORECASE)


def field_instead(error_text: str, sent: str) -> str | None:
    """The cap field to send instead when a server's error refuses `sent`; None when the
    error is about something else."""
    said = _USE_INSTEAD.search(error_text)
    if said and said.group(1) != sent:
        return said.group(1)
    if sent in error_text and _REFUSED.search(error_text):
        later = CAP_FIELDS[CAP_FIELDS.index(sent) + 1:] if sent in CAP_FIELDS else ()
        return later[0] if later else None
    return None
