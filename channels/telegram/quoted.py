"""Someone else's words in a Telegram message, kept apart from the person's own (issue 43).

A forwarded message (`forward_origin`) is entirely someone else's: its text, or the caption
of forwarded media, is third-party text and the person's own words are "" (Telegram sends a
comment typed with a forward as a message of its own). In a reply, the quoted part
(`quote`, a TextQuote) and the message replied to (`reply_to_message`) are someone else's
too, unless that message is Valet's own (the person answering Valet's card or question: its
words are Valet's, not a stranger's). None of it ever answers a card, runs a command or says
a pairing word: only `IncomingMessage.text` does (bot.contracts.envelopes.ThirdPartyText).
"""

from __future__ import annotations

from telegram import (
    Message,
    MessageOrigin,
    MessageOriginChannel,
    MessageOriginChat,
    MessageOriginHiddenUser,
    MessageOriginUser,
)

from bot.contracts.envelopes import ThirdPartyText


def forwarded(message: Message) -> bool:
    return message.forward_origin is not None


def own_text(message: Message) -> str:
    """The person's own words: the text or caption, "" for a forward."""
    return "" if forwarded(message) else (message.text or message.caption or "")


def others_words(message: Message, bot_id: int) -> tuple[ThirdPartyText, ...]:
    """The third-party text a message carries, in the order the person saw it."""
    found: list[ThirdPartyText] = []
    if message.forward_origin is not None:
        name = origin_name(message.forward_origin)
        if message.text:
            found.append(ThirdPartyText("forwarded", message.text, name))
        elif message.caption:
            found.append(ThirdPartyText("forwarded_caption", message.caption, name))
    replied = message.reply_to_message
    valets = replied is not None and replied.from_user is not None and \
        replied.from_user.id == bot_id
    if valets:
        return tuple(found)
    author = _author(message)
    if message.quote is not None and message.quote.text:
        found.append(ThirdPartyText("quote", message.quote.text, author))
    if replied is not None:
        words = replied.text or replied.caption or ""
        if words and (message.quote is None or message.quote.text != words):
            found.append(ThirdPartyText("reply", words, author))
    return tuple(found)


def _author(message: Message) -> str:
    """Who wrote the message replied to: its sender, or the origin of a message from
    another chat (`external_reply`)."""
    replied = message.reply_to_message
    if replied is not None:
        if replied.forward_origin is not None:
            return origin_name(replied.forward_origin)
        if replied.from_user is not None:
            return replied.from_user.full_name
        if replied.sender_chat is not None:
            return replied.sender_chat.effective_name or ""
    if message.external_reply is not None:
        return origin_name(message.external_reply.origin)
    return ""


def origin_name(origin: MessageOrigin) -> str:
    """How a forward's origin is named: a user, a hidden user's name, a chat, a channel."""
    if isinstance(origin, MessageOriginUser):
        return origin.sender_user.full_name
    if isinstance(origin, MessageOriginHiddenUser):
        return origin.sender_user_name
    if isinstance(origin, MessageOriginChat):
        return origin.sender_chat.effective_name or "a chat"
    if isinstance(origin, MessageOriginChannel):
        return origin.chat.effective_name or "a channel"
    return ""
