"""Log records worth telling the person at the terminal, as one dim line in the chat (pipe
mode too: no line editor needed for them)."""

from __future__ import annotations

import logging
from collections.abc import Callable


class ChatNotes(logging.Handler):
    """The few log records worth telling the person while they wait (the LLM is being
    retried) as one dim line in the chat, in plain words. No log line itself ever reaches
    the chat (a warning, an event-loop stall): those are in the log file (`valet logs`)."""

    def __init__(self, note: Callable[[str], None]) -> None:
        super().__init__(logging.WARNING)
        self._note = note

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = note_for(record)
            if text is not None:
                self._note(f"({text})")
        except Exception:  # a note is a courtesy: never break the caller
            self.handleError(record)


# An error of the LLM port in the person's words (never its class name).
_WHAT = {"LLMRateLimitError": "the LLM is busy (rate limited)",
         "LLMTimeoutError": "the LLM did not answer in time",
         "LLMServerError": "the LLM server had a problem",
         "LLMContextOverflowError": "the conversation is too long for the model",
         "LLMMalformedResponseError": "the LLM's answer could not be read",
         "LLMBadRequestError": "the LLM server refused the request",
         "LLMAuthError": "the LLM server refused the API key",
         "LLMModelNotFoundError": "the LLM server does not know the model"}


def note_for(record: logging.LogRecord) -> str | None:
    """The person's words for a record, or None: not for the chat. "Another way" only when
    one is tried: a shorter view of the conversation, or a fallback model."""
    if record.name == "bot.llm.recovery" and record.msg.startswith("llm call failed") \
            and len(record.args or ()) == 4:
        kind, attempt, _err, decision = record.args  # type: ignore[misc]
        what = _WHAT.get(str(kind), "the LLM request failed")
        delay = getattr(decision, "delay", None)
        if delay is not None:
            then = f"trying again in {delay:.0f} s"
        elif type(decision).__name__ == "Escalate":
            then = "asking again with less of the conversation"
        else:
            then = "not trying again"
        return f"{what}; {then} (attempt {attempt})"
    if record.name == "bot.loop.react" and record.msg.startswith("model %s failed") \
            and len(record.args or ()) == 3:
        left, kind, taken = record.args  # type: ignore[misc]
        return f"{_WHAT.get(str(kind), 'the LLM request failed')} ({left}); trying another " \
               f"model: {taken}"
    return None
