"""Whom Valet is speaking to: the listener's language, for the length of a turn, a delivery or
a notice. One context variable, set where a person is known (the turn's start, the outbox
delivering to them, a notice composed for the owner: `speaking_to`), and read by the persona's
lines (persona.catalog.SpokenLines, and a channel's own words: `Spoken`) and by `say`, so a
line is written in the language of the person who reads it without every caller passing a
language along."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

# None: nobody in particular (start-up, the operator's command line): the persona's language.
_LISTENER: ContextVar[str | None] = ContextVar("valet_listener_language", default=None)


def listener_language() -> str | None:
    return _LISTENER.get()


@contextmanager
def speaking_to(language: str | None) -> Iterator[None]:
    """Lines said inside are in `language` (None: the persona's own)."""
    token = _LISTENER.set(language or None)
    try:
        yield
    finally:
        _LISTENER.reset(token)
