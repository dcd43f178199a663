"""Log records worth telling the person at the terminal, as one dim line in the chat (pipe
mode too: no line editor needed for them)."""

from __future__ import annotations

import logging
from collections.abc import Callable


class ChatNotes(logging.Handler):
    """Log records worth telling the person (an LLM retry, an error) as one dim line in the
    chat; the full record is in the log file."""

    def __init__(self, note: Callable[[str], None]) -> None:
        super().__init__(logging.WARNING)
        self._note = note

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self._note(f"({note_for(record)})")
        except Exception:  # a note is a courtesy: never break the caller
            self.handleError(record)


def note_for(record: logging.LogRecord) -> str:
    if record.name == "bot.llm" and record.msg.startswith("llm call failed") \
            and len(record.args or ()) == 4:
        kind, attempt, _err, decision = record.args  # type: ignore[misc]
        what = {"LLMRateLimitError": "the LLM is busy (rate limited)",
                "LLMTimeoutError": "the LLM did not answer in time",
                "LLMServerError": "the LLM server had a problem"}.get(str(kind), str(kind))
        delay = getattr(decision, "delay", None)
        then = f"trying again in {delay:.0f} s" if delay is not None else "trying another way"
        return f"{what}; {then} (attempt {attempt})"
    text = record.getMessage().splitlines()[0] if record.getMessage() else record.name
    return f"{record.levelname.lower()}: {text[:120]}"
