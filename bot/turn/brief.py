"""A reply that must be brief where it goes. A triggered run's (a morning summary by SMS: at
most `sms.summary_max_segments` segments): one shortening pass by the model, then, if it is
still too long, whole sentences from the end are dropped, so nothing arrives half-said. A reply
to a person (SMS: `sms.max_segments`): one shortening pass only; the channel sends what fits
and keeps the rest for the person to ask for ("MORE").

The channel says what brief means for it (its sender's `brevity`, for a
triggered run or a reply): a test
on the text as it will be sent, and about how many characters that is, for the model. The
shortening call's tokens count towards the turn's (`spent`).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable

from bot.channel import Brevity
from bot.llm.port import LLM, LLMError, TokenUsage

log = logging.getLogger(__name__)

SHORTEN = ("Shorten this message so that it fits in about {chars} characters. Keep what matters "
           "most, in the same words where you can; drop greetings, sign-offs and anything "
           "repeated. Plain text, no markdown. Answer with the shortened message only.")
_SENTENCE = re.compile(r"(?<=[.!?…])[\"')\]]*\s+")


async def made_brief(text: str, brevity: Brevity, llm: LLM, *,
                     spent: TokenUsage | None = None) -> str:
    """`text` when it fits; else the model's shorter version if that fits; else the longest
    run of whole sentences that fits."""
    if brevity.fits(text):
        return text
    shorter = await _shortened(text, brevity, llm, spent)
    if shorter and brevity.fits(shorter):
        return shorter
    return whole_sentences(shorter or text, brevity.fits)


async def shortened_once(text: str, brevity: Brevity, llm: LLM, *,
                         spent: TokenUsage | None = None) -> str:
    """`text` when it fits; else the model's shorter version (when it is shorter), which
    may still be too long: the channel then sends what fits and keeps the rest."""
    if brevity.fits(text):
        return text
    shorter = await _shortened(text, brevity, llm, spent)
    return shorter if shorter and len(shorter) < len(text) else text


async def _shortened(text: str, brevity: Brevity, llm: LLM,
                     spent: TokenUsage | None) -> str | None:
    try:
        response = await llm.complete(
            [{"role": "system", "content": SHORTEN.format(chars=brevity.about_chars)},
             {"role": "user", "content": text}], None)
    except LLMError as err:  # the cut still keeps it short
        log.warning("shortening a brief reply failed: %s", err)
        return None
    if spent is not None:
        spent.add(response.usage)
    return (response.content or "").strip() or None


def whole_sentences(text: str, fits: Callable[[str], bool]) -> str:
    """The first sentences of `text`, as many as fit; a first sentence too long alone is cut
    at a word and ends with "…"."""
    sentences = [s for s in _SENTENCE.split(text.strip()) if s]
    kept: list[str] = []
    for sentence in sentences:
        if not fits(" ".join([*kept, sentence])):
            break
        kept.append(sentence)
    if kept:
        return " ".join(kept)
    words = text.split()
    while words and not fits(" ".join(words) + "…"):
        words.pop()
    return " ".join(words) + "…" if words else ""
