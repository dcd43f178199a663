"""What of a chat template a model may leave in its answer, taken out before anyone reads it
(recorded on llama.cpp and llama-cpp-python: ../shared/data/real_llamacpp/, replayed in
tests/unit/test_template_debris.py):

- chat-template tokens of the common families (`<|im_start|>`, `<|im_end|>`, `<|eot_id|>`,
  `<end_of_turn>`, `</s>`…): a model served with the wrong template writes them and goes on
  with turns of its own making. The answer is what comes before the first one (after any it
  opens with, and the role word a `<|im_start|>` carries);
- `<tools>` and `</tools>` (the Hermes template's list of tools, imitated): the tags go;
- a `<tool_response>` tag (the template's tool result, imitated: "Saved note 12"): no tool
  ran, so no word of the answer is passed off as a result: it is dropped, `imitated` is set
  and the loop tells the person nothing was done;
- JSON shaped like a call (`{"name": …, "arguments": …}`) naming no offered tool: a made-up
  call is not words for a person; it goes (one that does not parse, to the end of its
  paragraph), and counts as an imitation;
- HTML entities a server escaped (llama-cpp-python renders its templates with autoescape on:
  `it&#39;s`): read back into their characters.
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass

# Where a model's turn ends (or a new one starts), per template family: ChatML (Qwen, SmolLM,
# Hermes), Llama 3, Gemma, Phi-3, Mistral/Llama 2, GPT-style end of text, DeepSeek.
TURN_TOKENS = ("<|im_end|>", "<|im_start|>", "<|eot_id|>", "<|eom_id|>",
               "<|start_header_id|>", "<|end_header_id|>", "<|begin_of_text|>",
               "<end_of_turn>", "<start_of_turn>", "<|end|>", "<|user|>", "<|assistant|>",
               "<|system|>", "<|endoftext|>", "</s>", "[INST]", "[/INST]",
               "<｜end▁of▁sentence｜>", "<｜User｜>", "<｜Assistant｜>")
_TURN = re.compile("|".join(re.escape(t) for t in TURN_TOKENS), re.IGNORECASE)
# A token that opens a turn is followed by its role's name on the same line.
_OPENS_TURN = ("<|im_start|>", "<start_of_turn>", "<|start_header_id|>")
_ROLE = re.compile(r"[ \t]*[A-Za-z_]{1,20}[ \t]*(?:<\|end_header_id\|>)?[ \t]*\n")
_TOOLS_TAG = re.compile(r"</?tools>", re.IGNORECASE)
_RESPONSE_TAG = re.compile(r"</?tool_response>", re.IGNORECASE)
_CALL_SHAPED = re.compile(r'\{\s*"name"\s*:\s*"([^"\\]{0,200})"\s*,\s*"(?:arguments|parameters)"')
_ENTITY = re.compile(r"&(?:#\d{1,7}|#x[0-9a-fA-F]{1,6}|quot|amp|apos|lt|gt|nbsp);")

# Every marker this module reads: an answer holding none of them is passed as it is.
MARKERS = (*TURN_TOKENS, "<tools>", "</tools>", "<tool_response>", "</tool_response>")


@dataclass(frozen=True)
class Cleaned:
    text: str
    template_tokens: bool = False  # chat-template tokens were cut
    imitated: bool = False  # a tool result or a call was imitated: nothing ran


def may_hold_debris(text: str) -> bool:
    return "<" in text or "&" in text or "[" in text or '"name"' in text


def clean_template(text: str, offered: frozenset[str]) -> Cleaned:
    """`text` without template debris (the module's list), and what was found."""
    if not may_hold_debris(text):
        return Cleaned(text)
    cut, tokens = _cut_at_turn_end(text)
    if _RESPONSE_TAG.search(cut):  # a made-up result, whatever words surround it
        return Cleaned("", tokens, imitated=True)
    tags = bool(_TOOLS_TAG.search(cut))
    cut = _TOOLS_TAG.sub("", cut)
    cut, made_up = _without_made_up_calls(cut, offered)
    if _ENTITY.search(cut):
        cut = html.unescape(cut)
    return Cleaned(cut.strip() if (tokens or tags or made_up) else cut, tokens, made_up)


def _cut_at_turn_end(text: str) -> tuple[str, bool]:
    """The answer before the first end-of-turn token, past those it opens with."""
    pos = 0
    found = False
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        token = _TURN.match(text, pos)
        if token is None:
            break
        found = True
        pos = token.end()
        if token.group(0).lower() in _OPENS_TURN:
            role = _ROLE.match(text, pos)
            if role is not None:
                pos = role.end()
    end = _TURN.search(text, pos)
    if end is None:
        return text[pos:], found
    return text[pos:end.start()], True


def _without_made_up_calls(text: str, offered: frozenset[str]) -> tuple[str, bool]:
    """`text` without JSON shaped like a call that names no offered tool. A call that does
    not parse (cut off, or malformed) runs to the end of its paragraph."""
    if '"name"' not in text:
        return text, False
    out: list[str] = []
    pos = 0
    removed = False
    decoder = json.JSONDecoder()
    while (found := _CALL_SHAPED.search(text, pos)) is not None:
        if found.group(1) in offered:
            out.append(text[pos:found.end()])
            pos = found.end()
            continue
        out.append(text[pos:found.start()])
        removed = True
        try:
            _, pos = decoder.raw_decode(text, found.start())
        except (ValueError, RecursionError):  # to the paragraph's end, or the answer's
            blank = text.find("\n\n", found.end())
            pos = len(text) if blank == -1 else blank
    out.append(text[pos:])
    return "".join(out), removed


def unescape_entities(text: str) -> str:
    return html.unescape(text) if _ENTITY.search(text) else text
