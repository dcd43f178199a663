"""Approval cards as plain text, for a channel that has no buttons or cannot use them now:
the toy channel, WhatsApp without its Content API, and SMS (which cuts them into segments
itself, channels/sms/render.py). One card is its request as a sentence, every argument the
registry shows on a line of its own (those the summary does not already say), and how to
answer it in the listener's language (the persona's lines, read through
persona.speaking.speaking_to); several cards carry their codes ("4821 yes",
bot.approvals.grammar). A pairing request is answered with its code, never a bare yes: a
stranger must not be able to make the owner's "yes" answer their request."""

from __future__ import annotations

from bot.contracts.envelopes import ApprovalPrompt, PromptKind
from persona.lines import Lines, fill
from persona.lines_channels import SmsLines


def sentence(summary: str, limit: int = 600) -> str:
    """The summary on one line, at most `limit` characters, its first letter a capital."""
    summary = " ".join(summary.split())
    if len(summary) > limit:
        summary = summary[:limit - 3].rstrip() + "..."
    return summary[:1].upper() + summary[1:]


def argument_lines(prompt: ApprovalPrompt) -> list[str]:
    """Each argument the action receives ("to: ana@example.com"), but those its summary
    already says word for word."""
    return [f"{key}: {value}" for key, value in prompt.details
            if f"{key}: {value}" not in prompt.summary]


def pairing_card(prompt: ApprovalPrompt, lines: SmsLines) -> str:
    return fill(lines.sms_pairing_prompt, code=prompt.code, approve=lines.pairing_approve_word,
                deny=lines.pairing_deny_word)


def card_in_words(prompt: ApprovalPrompt, lines: Lines) -> str:
    """One card as text, answered as any typed yes or no (bot.approvals.grammar), or, for a
    pairing request, with its code."""
    if prompt.kind is PromptKind.PAIRING:
        return pairing_card(prompt, lines)
    template = lines.card_in_words_changeable if prompt.allow_modification \
        else lines.card_in_words
    return "\n".join([fill(template, summary=sentence(prompt.summary)),
                      *argument_lines(prompt)])


def cards_in_words(prompts: tuple[ApprovalPrompt, ...], lines: Lines) -> str:
    """The cards of one message as text, each with its code when there are several."""
    ordered = sorted(prompts, key=lambda p: p.position)
    if len(ordered) == 1:
        return card_in_words(ordered[0], lines)
    return "\n".join(f"{p.code}: {card_in_words(p, lines)}" for p in ordered)
