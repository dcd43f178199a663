"""An outbox message as SMS: plain text, approval prompts as typed replies, GSM-7 where it can
be, split into messages of at most 1,600 characters on sentence boundaries, each with its cost.

Approval prompts never ask for a word carriers and Twilio act on themselves (STOP, START,
HELP, YES, NO...) as the whole answer: one pending request is answered "1" or "2", several by
their short codes ("4821 YES"). A pairing request is answered with its code ("PAIR 4K7QXZ",
"DENY 4K7QXZ"), never a digit.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace

from bot.contracts.envelopes import ApprovalPrompt, OutboundMessage, PromptKind
from bot.text.split import split_text
from channels.plain_cards import pairing_card, sentence
from channels.sms.cut import cut_to_fit, fits, kept_parts
from channels.sms.gsm import Encoding, cost, fold
from channels.sms.plain_letters import plain_letters
from channels.sms.plain_letters import wanted as plain_letters_wanted
from persona.catalog import said_in
from persona.lines import DEFAULT, fill
from persona.lines_channels import SmsLines

MAX_CHARS = 1600  # Twilio refuses a longer Body
# Words a carrier or Twilio answers itself when they are the whole message.
RESERVED_WORDS = frozenset({
    "STOP", "STOPALL", "UNSUBSCRIBE", "CANCEL", "END", "QUIT", "OPTOUT", "REVOKE", "START",
    "UNSTOP", "YES", "NO", "HELP", "INFO"})


@dataclass(frozen=True)
class SmsBody:
    text: str
    encoding: Encoding
    segments: int


# --- markdown to plain text -----------------------------------------------------------------

_FENCE = re.compile(r"^```[^\n]*\n?|^```\s*$", re.MULTILINE)
_IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)\s]+)[^)]*\)")
_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)[^)]*\)")
_AUTOLINK = re.compile(r"<(https?://[^>\s]+)>")
_BOLD = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1", re.DOTALL)
_ITALIC = re.compile(r"(?<![\w*])([*_])(?=\S)([^*_\n]+?)(?<=\S)\1(?![\w*])")
_STRIKE = re.compile(r"~~(.+?)~~")
_CODE = re.compile(r"`([^`\n]+)`")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+", re.MULTILINE)
_QUOTE = re.compile(r"^\s{0,3}>\s?", re.MULTILINE)
_BULLET = re.compile(r"^(\s*)[*+]\s+", re.MULTILINE)
_RULE = re.compile(r"^\s{0,3}([-*_])(\s*\1){2,}\s*$", re.MULTILINE)
_BLANK_LINES = re.compile(r"\n{3,}")
# Pictographs people and models send as emoji (Unicode's Extended_Pictographic, less the few
# that are also ordinary text symbols such as (c), TM and plain arrows), with the joiners and
# modifiers that build them: any one makes a whole SMS UCS-2 (70 characters a segment).
_EMOJI = re.compile(
    "[ \t]*(?:[\U0001F000-\U0001FAFF\U00002600-\U000027BF\U00002B00-\U00002BFF\U0001F1E6-\U0001F1FF"
    "\u203C\u2049\u2139\u21A9\u21AA\u231A\u231B\u2328\u23CF\u23E9-\u23F3\u23F8-\u23FA"
    "\u24C2\u25AA\u25AB\u25B6\u25C0\u25FB-\u25FE\u2934\u2935\u3030\u303D\u3297\u3299"
    "\U0000FE0E\U0000FE0F\U0000200D\U000020E3\U0001F3FB-\U0001F3FF])+")


def _link(match: re.Match[str]) -> str:
    label, url = match.group(1).strip(), match.group(2)
    bare = url.split("://", 1)[-1].rstrip("/")
    return url if not label or label in (url, bare) else f"{label} ({url})"


def plain_text(markdown: str) -> str:
    """Markdown as an SMS reads it: no markup, links as "label (url)"."""
    text = _FENCE.sub("", markdown)
    text = _IMAGE.sub(_link, text)
    text = _LINK.sub(_link, text)
    text = _AUTOLINK.sub(r"\1", text)
    text = _RULE.sub("", text)
    text = _HEADING.sub("", text)
    text = _QUOTE.sub("", text)
    text = _BULLET.sub(r"\1- ", text)
    text = _BOLD.sub(r"\2", text)
    text = _STRIKE.sub(r"\1", text)
    text = _CODE.sub(r"\1", text)
    text = _ITALIC.sub(r"\2", text)
    return _BLANK_LINES.sub("\n\n", text).strip()


def without_emoji(text: str) -> str:
    text = _EMOJI.sub("", text)
    return re.sub(r"[ \t]{2,}", " ", re.sub(r"[ \t]+\n", "\n", text)).strip()


# --- approval prompts -----------------------------------------------------------------------


def _sentence(summary: str) -> str:
    return sentence(summary, limit=300)  # shorter than a card elsewhere: segments cost


# Languages whose cards end with their verb ("E-Mail ... senden"; persona/lines_cards.py):
# there the card's first word is a noun, and "1" does the catalog's sms_prompt_verb.
_VERB_LAST = frozenset({"de"})


def _verb(prompt: ApprovalPrompt, lines: SmsLines) -> str:
    """What "1" does, in the request's own verb ("send", "enviar") when it starts with one."""
    first = prompt.summary.split(maxsplit=1)[0].lower() if prompt.summary.strip() else ""
    leads = said_in(lines) not in _VERB_LAST
    return first if leads and first.isalpha() and first.upper() not in RESERVED_WORDS \
        else lines.sms_prompt_verb


def render_prompts(prompts: tuple[ApprovalPrompt, ...], lines: SmsLines = DEFAULT) -> str:
    pairing = [p for p in prompts if p.kind is PromptKind.PAIRING]
    asked = _approval_prompts(tuple(p for p in prompts if p.kind is not PromptKind.PAIRING),
                              lines)
    # A pairing request is answered with its code, never a bare digit: a stranger texting
    # must not be able to make the owner's "1" answer their request.
    said = [pairing_card(p, lines) for p in pairing]
    return "\n".join([*([asked] if asked else []), *said])


def _approval_prompts(prompts: tuple[ApprovalPrompt, ...], lines: SmsLines) -> str:
    if not prompts:
        return ""
    if len(prompts) == 1:
        [prompt] = prompts
        template = lines.sms_prompt_changeable if prompt.allow_modification \
            else lines.sms_prompt
        return fill(template, summary=_sentence(prompt.summary), verb=_verb(prompt, lines))
    ordered = sorted(prompts, key=lambda p: p.position)
    said = [f"{p.position}) {_sentence(p.summary)} - code {p.code}" for p in ordered]
    said.append(fill(lines.sms_prompts, first=ordered[0].code, second=ordered[1].code))
    return "\n".join(said)


# --- splitting and cost ---------------------------------------------------------------------

_SENTENCE_END = re.compile(r"(?<=[.!?…:;])[\"')\]]*\s+|\n+")
_FULL_STOP = re.compile(r"[.!?…][\"')\]]*$")  # a sentence ends here, not a clause (: ;)
# A message that must be cut ends at a full stop within this many characters of its limit,
# rather than at a later colon or semicolon ("Note:" must not end a message).
LOOKBACK = 400


def _boundaries(text: str) -> list[tuple[int, bool]]:
    """Where a message may end (after a sentence, a clause or a paragraph), and whether the
    text before that point ends a sentence (. ! ? … or a paragraph break)."""
    found = []
    for match in _SENTENCE_END.finditer(text):
        before = text[:match.start()]
        found.append((match.end(), "\n" in match.group() or bool(_FULL_STOP.search(before))))
    return found


def _cut(text: str, limit: int) -> int:
    """Where the first message of `text` (longer than `limit`) ends: the last sentence end
    within LOOKBACK of the limit, else the last clause or sentence end that fits, else the
    last space past half the limit, else the limit."""
    fits = [(end, full) for end, full in _boundaries(text[:limit + 1])
            if len(text[:end].rstrip()) <= limit]
    near = [end for end, full in fits if full and end >= limit - LOOKBACK]
    if near:
        return near[-1]
    if fits:
        return fits[-1][0]
    space = text.rfind(" ", 0, limit + 1)
    return space if space > limit // 2 else limit


def split_messages(text: str, limit: int = MAX_CHARS) -> list[str]:
    """Messages of at most `limit` characters, cut where a reader expects a pause."""
    return split_text(text, limit, _cut)


def _bodies(text: str, limit: int) -> list[SmsBody]:
    bodies: list[SmsBody] = []
    for part in split_messages(text, limit):
        folded = fold(part)
        if len(folded) > limit:  # "…" became "...": split the GSM-7 text again
            bodies.extend(_bodies(folded, limit))
            continue
        c = cost(folded)
        bodies.append(SmsBody(folded, c.encoding, c.segments))
    return bodies


def render(message: OutboundMessage, *, emoji: bool = False, limit: int = MAX_CHARS,
           lines: SmsLines = DEFAULT) -> list[SmsBody]:
    """The SMS messages one outbox row becomes, in order (its prompts asked in `lines`)."""
    text = plain_text(message.text)
    prompts = render_prompts(message.prompts, lines)
    text = f"{text}\n{prompts}".strip() if prompts else text
    return _rendered_bodies(text, emoji, limit)


def render_capped(message: OutboundMessage, *, max_segments: int, emoji: bool = False,
                  lines: SmsLines = DEFAULT) -> tuple[list[SmsBody], str]:
    """`render`, held to `max_segments` with no exception: the message, or its first part
    with the persona's note saying how to get the rest (channels.sms.cut), and the rest (""
    when none). Its prompts go together when they fit, else one card a message."""
    text, kept = kept_parts(message.text)  # the rest of an earlier message: its cards whole
    text = _sendable(plain_text(text), emoji)
    kept = [_sendable(card, emoji) for card in kept]
    tail = _sendable(render_prompts(message.prompts, lines), emoji)
    note = lines.sms_more
    link = _sendable(lines.sms_link_elsewhere, emoji)
    if not kept:  # (cards kept for MORE go one a message, as they began)
        together = cut_to_fit(text, tail, max_segments, note, link_line=link)
        if together.text and not together.rest:
            return _bodies(together.text, MAX_CHARS), ""
    cards = [*kept, *(_sendable(c, emoji) for c in
                      cards_of(message.prompts, lines, max_segments, note, emoji))]
    cut = cut_to_fit(text, "", max_segments, note, cards=cards, link_line=link)
    return (_bodies(cut.text, MAX_CHARS) if cut.text else []), cut.rest


def cards_of(prompts: tuple[ApprovalPrompt, ...], lines: SmsLines, max_segments: int,
             note: str, emoji: bool = False) -> list[str]:
    """Each prompt as a card of its own that fits a message with the note: its summary
    shortened as far as it must be, its code and its answer never."""
    approvals = tuple(p for p in prompts if p.kind is not PromptKind.PAIRING)
    cards = []
    for prompt in sorted(approvals, key=lambda p: p.position):
        def card(summary: str, prompt: ApprovalPrompt = prompt) -> str:
            if len(approvals) == 1:
                return _approval_prompts((replace(prompt, summary=summary),), lines)
            return (f"{prompt.position}) {_sentence(summary)} - code {prompt.code}\n"
                    + fill(lines.sms_card_answer, code=prompt.code))
        cards.append(_shortened(card, prompt.summary, max_segments, note, emoji,
                                f"{prompt.code} YES / {prompt.code} NO"))
    cards += [render_prompts((p,), lines) for p in prompts if p.kind is PromptKind.PAIRING]
    return cards


def _shortened(card: Callable[[str], str], summary: str, max_segments: int, note: str,
               emoji: bool, bare: str) -> str:
    """The card with the longest start of `summary` that fits with the note; `bare` (the
    code and its answer alone, in GSM-7) when not even the card's own words fit."""
    def fits_with(length: int) -> bool:
        shown = summary[:length].rstrip() + ("..." if length < len(summary) else "")
        return fits(f"{_sendable(card(shown), emoji)} {note}", max_segments)

    if fits_with(len(summary)):
        return card(summary)
    low, high, best = 0, len(summary) - 1, None
    while low <= high:
        middle = (low + high) // 2
        if fits_with(middle):
            best, low = middle, middle + 1
        else:
            high = middle - 1
    if best is None:
        return bare
    return card(summary[:best].rstrip() + "...")


def _sendable(text: str, emoji: bool) -> str:
    return _gsm(text if emoji else without_emoji(text))


def _gsm(text: str) -> str:
    """The text folded to GSM-7 where it can be, its letters made plain where the reader's
    language allows (sms.plain_letters)."""
    return fold(plain_letters(text) if plain_letters_wanted() else text)


def segments_of(markdown: str, *, emoji: bool = False) -> int:
    """What a text costs once sent: the segments of every message it becomes."""
    return sum(b.segments for b in _rendered_bodies(plain_text(markdown), emoji, MAX_CHARS))


def _rendered_bodies(text: str, emoji: bool, limit: int) -> list[SmsBody]:
    text = _sendable(text, emoji)
    return _bodies(text, limit) if text else []
