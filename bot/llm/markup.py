"""Whether call markup in an answer is the answer (`is_the_answer`), and markup that is not
a call taken out of what is shown (`without_markup`).

Markup is read only where the answer is the call: a tag starts a line, only whitespace or an
end token follows the calls, and an unclosed Hermes block holds JSON or a function tag.
`<tool_call>` in the middle of a sentence is a word ("use the options within <tool_call>");
`without_markup` takes such markup (and an echo of a page's) out of what is shown. The calls
themselves are read by bot.llm.dialects.
"""

from __future__ import annotations

import ast
import re

from bot.llm.call_scan import (
    STRAY,
    after_name,
    answer_text,
    json_then_nothing,
    json_values,
    past_call_body,
)

MARKERS = ("<tool_call>", "<function=", "[TOOL_CALLS]", "<|python_tag|>")
_MARKER = re.compile("|".join(re.escape(m) for m in MARKERS))


def is_the_answer(text: str) -> bool:
    """Whether the markup in `text` is the answer itself, not words around a quoted call: a
    `<tool_call>` or `<function=` tag starts a line, and nothing but whitespace or end tokens
    follows the calls."""
    first = _MARKER.search(text)
    if first is None:
        return False
    marker = first.group(0)
    line_start = text.rfind("\n", 0, first.start()) + 1
    if marker in ("<tool_call>", "<function=") and text[line_start:first.start()].strip():
        return False  # tags written as words, inside a sentence (a special token may follow
        # the model's own lead-in: "Let me calculate that.[TOOL_CALLS]…")
    if marker == "<tool_call>":
        return _closed_form_ends(text, "<tool_call>", "</tool_call>")
    if marker == "<function=":
        return _closed_form_ends(text, "<function=", "</function>")
    if marker == "[TOOL_CALLS]":
        return all(json_then_nothing(after_name(seg.strip()))
                   for seg in text[first.end():].split("[TOOL_CALLS]") if seg.strip())
    body = STRAY.sub("", text[first.end():]).strip()
    if list(json_values(body, whole=True)):
        return True
    try:
        ast.parse(body, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def _closed_form_ends(text: str, opening: str, closing: str) -> bool:
    last_open = text.rfind(opening)
    last_close = text.rfind(closing)
    if last_close < last_open:  # the last one unclosed: the answer ended in it
        body = text[last_open + len(opening):].lstrip()
        return opening == "<function=" or body[:1] in ("{", "<")
    return answer_text(text[last_close + len(closing):]) is None


_BLOCK = re.compile(r"<tool_call>.*?</tool_call>|<function=[^>\n]{0,200}>.*?</function>",
                    re.S)
_LONE = re.compile(r"</?tool_call>|<function=[^>\n]{0,200}>|</function>|</?parameter[^>]{0,200}>"
                   r"|\[TOOL_CALLS\]|\[ARGS\]|<\|python_tag\|>", re.I)


def without_markup(text: str) -> str:
    """`text` with call markup that is not a call taken out: whole blocks, then lone tags and
    tokens (a JSON body after `[TOOL_CALLS]` or `<|python_tag|>` with them)."""
    text = _BLOCK.sub("", text)
    out: list[str] = []
    pos = 0
    for found in _LONE.finditer(text):
        if found.start() < pos:
            continue
        out.append(text[pos:found.start()])
        pos = found.end()
        if found.group(0) in ("[TOOL_CALLS]", "<|python_tag|>"):
            pos = past_call_body(text, pos)
    out.append(text[pos:])
    return re.sub(r"[ \t]{2,}", " ", "".join(out)).strip()
