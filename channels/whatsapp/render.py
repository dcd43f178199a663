"""An outbox message as WhatsApp shows it: the LLM's markdown in WhatsApp's own marks
(*bold*, _italic_, ~strike~, ```code```), cut into messages Twilio takes (wire.MAX_BODY) where
a reader expects a pause; a card in words when it cannot be buttons."""

from __future__ import annotations

import re

from bot.contracts.envelopes import ApprovalPrompt, PromptKind
from bot.text.split import split_text
from channels.whatsapp.wire import MAX_BODY
from persona.lines import Lines, fill

_BOLD = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1", re.DOTALL)
_ITALIC = re.compile(r"(?<![\w*])\*(?=\S)([^*\n]+?)(?<=\S)\*(?![\w*])")
_STRIKE = re.compile(r"~~(.+?)~~")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)
_LINK = re.compile(r"!?\[([^\]]+)\]\(([^)\s]+)[^)]*\)")
_BULLET = re.compile(r"^(\s*)[*+]\s+", re.MULTILINE)
_BLANK_LINES = re.compile(r"\n{3,}")
_PAUSE = re.compile(r"\n\n|(?<=[.!?…])\s+|\n")


def _link(match: re.Match[str]) -> str:
    label, url = match.group(1).strip(), match.group(2)
    return url if label in (url, url.split("://", 1)[-1].rstrip("/")) else f"{label} ({url})"


def whatsapp_text(markdown: str) -> str:
    """Markdown in WhatsApp's marks: **b** -> *b*, *i* -> _i_, ~~s~~ -> ~s~, a heading bold,
    a link as "label (url)"; code fences stay (WhatsApp shows ``` as monospace)."""
    text = _LINK.sub(_link, markdown)
    text = _BULLET.sub(r"\1- ", text)
    text = _ITALIC.sub(r"_\1_", text)
    text = _BOLD.sub(r"*\2*", text)
    text = _STRIKE.sub(r"~\1~", text)
    text = _HEADING.sub(r"*\1*", text)
    return _BLANK_LINES.sub("\n\n", text).strip()


def _cut(text: str, limit: int) -> int:
    """Where the first message ends: the last paragraph, sentence or line end within the
    limit (past its half), else the last space, else the limit."""
    ends = [m.end() for m in _PAUSE.finditer(text[:limit + 1]) if m.end() <= limit]
    good = [end for end in ends if end > limit // 2]
    if good:
        return good[-1]
    space = text.rfind(" ", 0, limit + 1)
    return space if space > limit // 2 else limit


def split_messages(text: str, limit: int = MAX_BODY) -> list[str]:
    return split_text(text, limit, _cut)


def card_in_words(prompt: ApprovalPrompt, lines: Lines) -> str:
    """One card as text, answered as any typed yes or no (bot.approvals.grammar), or, for a
    pairing request, with its code."""
    if prompt.kind is PromptKind.PAIRING:
        return fill(lines.sms_pairing_prompt, code=prompt.code,
                    approve=lines.pairing_approve_word, deny=lines.pairing_deny_word)
    template = lines.whatsapp_card_changeable if prompt.allow_modification \
        else lines.whatsapp_card
    return fill(template, summary=_sentence(prompt.summary))


def cards_in_words(prompts: tuple[ApprovalPrompt, ...], lines: Lines) -> str:
    """Several cards as text: each with its code when there are several (any answer of
    bot.approvals.grammar: "4821 yes")."""
    ordered = sorted(prompts, key=lambda p: p.position)
    if len(ordered) == 1:
        return card_in_words(ordered[0], lines)
    return "\n".join(f"{p.code}: {card_in_words(p, lines)}" for p in ordered)


def _sentence(summary: str, limit: int = 600) -> str:
    summary = " ".join(summary.split())
    if len(summary) > limit:
        summary = summary[:limit - 3].rstrip() + "..."
    return summary[:1].upper() + summary[1:]
