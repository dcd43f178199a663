"""A server's refusal of a request too long for its context window, read for the window's size
(bot.llm.context_limit keeps it; the client learns it from the refusal)."""

from __future__ import annotations

import re

# What servers say when a request is too long: OpenAI, vLLM and llama-cpp-python ("This
# model's maximum context length is 2048 tokens"), llama.cpp ("request (9487 tokens) exceeds
# the available context size (8192 tokens)", and its error's n_ctx field).
_LIMIT = re.compile(r"maximum context length is (\d+)|available context size \((\d+) tokens\)"
                    r"|['\"]n_ctx['\"]\s*:\s*(\d+)", re.IGNORECASE)
SMALLEST = 256  # a number below this is not a context window (a misread)


def limit_from_refusal(text: str) -> int | None:
    """The context window a refusal for length names, if it names one."""
    for found in _LIMIT.finditer(text):
        value = int(next(group for group in found.groups() if group))
        if value >= SMALLEST:
            return value
    return None
