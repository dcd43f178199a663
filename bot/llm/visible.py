"""What of a streamed answer a person may see while it is written (the terminal's live text,
any channel that shows progress): never thinking, never tool-call markup, never half a tag.

The answer's final reading (bot.llm.reading) decides what is said; this only decides what is
safe to show early. So when in doubt it holds text back: the final reply brings it.

- `<think>`, `<thinking>`, `<reasoning>` blocks are skipped; a tag split across chunks is held
  until it is whole (a `<thi` at a chunk's end is not shown).
- `<tool_call>`, `<function=`, `[TOOL_CALLS]`, `<|python_tag|>` and template debris
  (`<|im_end|>` and the other turn tokens, `<tool_response>`, `<tools>`: bot.llm.template)
  end what is shown; HTML entities a server escaped are shown as their characters (one cut
  across chunks is held until whole); with
  tools offered, an answer that starts like JSON (`{`, `[`, a fence) is held whole: it may be
  a call.
- `thought_first`: the model may write its thinking with no opening tag (the DeepSeek-R1
  template opens it in the prompt): nothing is shown before a closing tag, or an opening one
  at the start. The port sets it until it has seen how the model answers, and for good once
  the model thought aloud in its text.
"""

from __future__ import annotations

import re
from enum import Enum, auto

from bot.llm import template
from bot.llm.markup import MARKERS as CALL_MARKERS
from bot.llm.port import TextSink
from bot.llm.reasoning import CLOSING, OPENING

TOOL_MARKERS = (*CALL_MARKERS, *template.MARKERS)
THINK_MARKERS = ("<think>", "<thinking>", "<reasoning>", "</think>", "</thinking>",
                 "</reasoning>")
_PARTIAL_ENTITY = re.compile(r"&#?[0-9A-Za-z]{0,7}\Z")
_TOOL = re.compile("|".join(re.escape(m) for m in TOOL_MARKERS), re.IGNORECASE)


class _State(Enum):
    SHOWING = auto()
    THINKING = auto()  # inside a block: until its closing tag
    THOUGHT_FIRST = auto()  # no opening tag yet: until a closing one
    HELD = auto()  # nothing more is shown (a call, or an answer that may be one)


class VisibleText:
    def __init__(self, sink: TextSink, *, tools_offered: bool, thought_first: bool) -> None:
        self._sink = sink
        self._tools = tools_offered
        self._text = ""
        self._pos = 0  # what is before it was shown or skipped
        self._state = _State.THOUGHT_FIRST if thought_first else _State.SHOWING
        self._closing: re.Pattern[str] = CLOSING
        self._started = False  # something visible was shown (leading blank lines are not)

    async def feed(self, chunk: str) -> None:
        self._text += chunk
        shown = self._advance()
        if shown:
            await self._sink(shown)

    def _advance(self) -> str:
        out: list[str] = []
        while True:
            if self._state is _State.HELD:
                break
            if self._state in (_State.THINKING, _State.THOUGHT_FIRST):
                if self._state is _State.THOUGHT_FIRST and self._opens_block():
                    continue
                closing = self._closing.search(self._text, self._pos)
                if closing is None:
                    break
                self._pos, self._state = closing.end(), _State.SHOWING
                continue
            if not self._show_until_marker(out):
                break
        return "".join(out)

    def _opens_block(self) -> bool:
        """In THOUGHT_FIRST, an opening tag before any closing one: the model does open its
        blocks after all."""
        opening = OPENING.search(self._text, self._pos)
        closing = CLOSING.search(self._text, self._pos)
        if opening is None or (closing is not None and closing.start() < opening.start()):
            return False
        self._enter_block(opening)
        return True

    def _enter_block(self, opening: re.Match[str]) -> None:
        self._pos, self._state = opening.end(), _State.THINKING
        self._closing = re.compile(rf"</{opening.group(1)}>", re.IGNORECASE)

    def _show_until_marker(self, out: list[str]) -> bool:
        """Show text up to the next marker and act on it; False when more text is needed."""
        if not self._started:
            rest = self._text[self._pos:]
            lead = len(rest) - len(rest.lstrip())
            if lead == len(rest):
                return False
            if self._tools and rest.lstrip()[:1] in ("{", "[", "`"):
                self._state = _State.HELD
                return False
            self._pos += lead
        markers = [m for m in (OPENING.search(self._text, self._pos),
                               CLOSING.search(self._text, self._pos),
                               _TOOL.search(self._text, self._pos))
                   if m is not None]
        if not markers:
            end = len(self._text) - _partial_marker(self._text[self._pos:])
            self._show(out, end)
            return False
        first = min(markers, key=lambda m: m.start())
        self._show(out, first.start())
        if first.re is OPENING:
            self._enter_block(first)
        elif first.re is CLOSING:
            self._pos = first.end()  # a stray closing tag: nothing to show
        else:
            self._state = _State.HELD
        return True

    def _show(self, out: list[str], end: int) -> None:
        if end > self._pos:
            out.append(template.unescape_entities(self._text[self._pos:end]))
            self._started = True
            self._pos = end


def _partial_marker(text: str) -> int:
    """How many characters at the end of `text` could be the start of a marker."""
    entity = _PARTIAL_ENTITY.search(text)
    if entity is not None:
        return len(text) - entity.start()
    markers = THINK_MARKERS + TOOL_MARKERS
    lowered = text[-max(len(m) for m in markers):].lower()
    for size in range(len(lowered), 0, -1):
        tail = lowered[-size:]
        if any(m.lower().startswith(tail) for m in markers):
            return size
    return 0
