"""A reply to what waits, cut into clauses of words, and the words that name a waiting request.

A clause is a list of lower-case tokens (words, numbers, emoji, punctuation; a phrase of
several words as one); joining words ("and", "but", "then") end a clause and are dropped.
bot.approvals.rules reads each clause.
"""

from __future__ import annotations

import re
import unicodedata

from bot.contracts.answer_words import AnswerWords
from bot.contracts.approvals import ApprovalRequest

_TOKEN = re.compile(r"[\w.+-]+@[\w.-]+\w|#?\d+(?![\w'])|[\w']+|[^\w\s]")
_CLAUSE_END = re.compile(r"[,;!.…]+(?=\s|$)|\n+|\s[-–—]\s")
_JUNK = re.compile("[\U0001F3FB-\U0001F3FF\uFE0E\uFE0F\u200D]")  # emoji modifiers
_QUOTES = str.maketrans({"’": "'", "‘": "'", "`": "'", "“": '"', "”": '"'})
_HYPHEN = re.compile(r"(?<=\w)-(?=\w)")  # "vas-y", "est-ce": two words
_STOP = frozenset({"the", "a", "an", "to", "it", "that", "this", "one", "please", "and",
                   "my", "for", "of", "on", "in", "go", "ahead", "with", "from", "at", "by",
                   "your", "you", "me", "i", "is", "are"})


def tokens(text: str, words: AnswerWords) -> list[str]:
    """Lower-case words, numbers, emoji and punctuation, a phrase of several words as one."""
    normal = unicodedata.normalize("NFKC", _JUNK.sub("", text.translate(_QUOTES)))
    found = _TOKEN.findall(_HYPHEN.sub(" ", normal).lower())
    phrases = words.phrases
    longest = max((p.count(" ") + 1 for p in phrases), default=1)
    merged: list[str] = []
    i = 0
    while i < len(found):
        for size in range(min(longest, len(found) - i), 1, -1):
            candidate = " ".join(found[i:i + size])
            if candidate in phrases:
                merged.append(candidate)
                i += size
                break
        else:
            merged.append(found[i])
            i += 1
    return merged


def clauses(text: str, words: AnswerWords) -> list[list[str]]:
    """The message's clauses, each a list of tokens (joining words dropped)."""
    found: list[list[str]] = []
    for part in _CLAUSE_END.split(text):
        current: list[str] = []
        for token in tokens(part, words):
            if token in words.joining:
                if current:
                    found.append(current)
                current = []
            else:
                current.append(token)
        if current:
            found.append(current)
    return found


_NUMBER = re.compile(r"#?[0-9]{1,4}")


def is_number(token: str) -> bool:
    """A position or a code as a person types it: "2", "#2", "4821"."""
    return _NUMBER.fullmatch(token) is not None


def keywords(approval: ApprovalRequest) -> set[str]:
    """The words that name a request: its summary's, its tool's, its arguments' names."""
    text = " ".join([approval.summary, approval.tool_name.replace("_", " "),
                     *(k.replace("_", " ") for k in approval.arguments)])
    normal = unicodedata.normalize("NFKC", text.translate(_QUOTES)).lower()
    return {w for w in re.findall(r"[\w']+", normal)
            if w not in _STOP and len(w) > 2 and not w.isdigit()}
