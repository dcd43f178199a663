"""A reasoning model's thinking written into the answer's text: `<think>…</think>` (DeepSeek-R1,
Qwen3, QwQ), `<thinking>` and `<reasoning>` blocks, served by a server without a reasoning
parser. It is taken out of what a person reads and kept as the answer's reasoning (/debug).

Thinking is read only where the model puts it: at the start of the answer (cases in
tests/unit/dialect_corpus/):
- whole blocks that open the answer, one after another (Qwen3 with thinking off writes an
  empty one);
- an unclosed block that opens the answer: it was cut off while thinking, the rest is thought;
- a closing tag with no opening one: DeepSeek-R1's template puts `<think>` into the prompt, so
  the answer starts with the thinking itself (vLLM's deepseek_r1 reasoning parser reads it the
  same way: everything before `</think>` is reasoning).

A tag anywhere else (in the middle of an answer, in a page or a mail the model quotes) is
text: it hides nothing. So is a closing tag that stands in the turn's third-party text
(`echoes`): the model is quoting it, and what comes before it is the person's answer.

Tags are matched without regard to case; the scan is linear in the text's length.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

TAGS = ("think", "thinking", "reasoning")
OPENING = re.compile(r"<(think|thinking|reasoning)>", re.IGNORECASE)
CLOSING = re.compile(r"</(think|thinking|reasoning)>", re.IGNORECASE)
_CLOSE_OF = {tag: re.compile(rf"</{tag}>", re.IGNORECASE) for tag in TAGS}


@dataclass(frozen=True)
class Thought:
    visible: str  # what is left for a person to read
    reasoning: str | None  # what was taken out, blocks joined by blank lines
    blocks: bool = False  # the text held thinking in tags
    unopened: bool = False  # ... starting with no opening tag (the R1 template's shape)


def split_reasoning(text: str, echoes: str = "") -> Thought:
    """`text` without the thinking that opens it, and that thinking. `echoes`: the turn's
    third-party text (a closing tag found there is the quote's, not the model's)."""
    first_open = OPENING.search(text)
    first_close = CLOSING.search(text)
    if first_open is None and first_close is None:
        return Thought(text, None)
    thought: list[str] = []
    pos = 0
    unopened = first_close is not None and (first_open is None
                                            or first_close.start() < first_open.start())
    if unopened and first_close is not None:
        if CLOSING.search(echoes) is not None:
            return Thought(text, None)  # a quoted closing tag: text, hiding nothing
        thought.append(text[:first_close.start()])
        pos = first_close.end()
    while True:  # blocks one after another at the start; the first words end them
        opening = OPENING.match(text, _skip_space(text, pos))
        if opening is None:
            break
        closing = _CLOSE_OF[opening.group(1).lower()].search(text, opening.end())
        if closing is None:  # cut off while thinking: the rest is thought
            thought.append(text[opening.end():])
            pos = len(text)
            break
        thought.append(text[opening.end():closing.start()])
        pos = closing.end()
    if not thought:
        return Thought(text, None)  # tags in the middle of the answer: text
    parts = [t.strip() for t in thought if t.strip()]
    return Thought(text[pos:].strip(), "\n\n".join(parts) or None, blocks=True,
                   unopened=unopened)


def _skip_space(text: str, pos: int) -> int:
    while pos < len(text) and text[pos].isspace():
        pos += 1
    return pos


def join_reasoning(*parts: str | None) -> str | None:
    """Reasoning from several places (a reasoning field, blocks in the text), in order."""
    found = [p.strip() for p in parts if p and p.strip()]
    return "\n\n".join(found) or None
