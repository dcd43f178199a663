"""What a streamed answer shows while it is written (bot.llm.visible), whatever the chunks:
never a thinking block or a piece of one, never tool-call markup, and the answer itself."""

from __future__ import annotations

import asyncio
import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.llm.visible import VisibleText

# Answers and thoughts without the characters markup starts with: the property is exact.
# Text with no marker character ("&" opens an HTML entity, held until whole: one at the very
# end of a stream is left to the final reply).
PLAIN = st.text(alphabet=st.characters(blacklist_characters="<[{`|&",
                                       blacklist_categories=("Cs", "Cc")), max_size=60)
TAGS = st.sampled_from(["think", "thinking", "reasoning", "THINK", "Think"])


def shown_while_streaming(text: str, cuts: list[int], *, tools: bool,
                          thought_first: bool = False) -> str:
    out: list[str] = []

    async def sink(chunk: str) -> None:
        out.append(chunk)

    async def feed() -> None:
        visible = VisibleText(sink, tools_offered=tools, thought_first=thought_first)
        points = sorted({0, len(text), *(c % (len(text) + 1) for c in cuts)})
        for start, end in itertools.pairwise(points):
            await visible.feed(text[start:end])

    asyncio.run(feed())
    return "".join(out)


@settings(max_examples=300, deadline=None)
@given(answer=PLAIN, thought=PLAIN, tag=TAGS, cuts=st.lists(st.integers(0, 500), max_size=12))
def test_a_thinking_block_is_never_shown_and_the_answer_is(answer: str, thought: str,
                                                            tag: str, cuts: list[int]) -> None:
    text = f"<{tag}>{thought}</{tag}>{answer}"
    assert shown_while_streaming(text, cuts, tools=True) == answer.lstrip()


@settings(max_examples=300, deadline=None)
@given(answer=PLAIN, thought=PLAIN, cuts=st.lists(st.integers(0, 500), max_size=12))
def test_thinking_with_no_opening_tag_is_never_shown(answer: str, thought: str,
                                                     cuts: list[int]) -> None:
    text = f"{thought}</think>{answer}"
    assert shown_while_streaming(text, cuts, tools=False, thought_first=True) == answer.lstrip()


@settings(max_examples=300, deadline=None)
@given(before=PLAIN, marker=st.sampled_from(["<tool_call>", "[TOOL_CALLS]", "<|python_tag|>",
                                             "<function="]),
       after=st.text(max_size=60), cuts=st.lists(st.integers(0, 500), max_size=12))
def test_nothing_after_tool_call_markup_is_shown(before: str, marker: str, after: str,
                                                 cuts: list[int]) -> None:
    text = f"{before}{marker}{after}"
    assert shown_while_streaming(text, cuts, tools=True) == before.lstrip()


def test_an_answer_that_starts_like_json_is_held_whole_when_tools_are_offered() -> None:
    call = '{"name": "calculate", "arguments": {"expression": "6*7"}}'
    assert shown_while_streaming(call, [3, 9], tools=True) == ""
    assert shown_while_streaming("  [1, 2]", [3], tools=False) == "[1, 2]"


@settings(max_examples=300, deadline=None)
@given(before=PLAIN, after=PLAIN, cuts=st.lists(st.integers(0, 500), max_size=12))
def test_an_entity_a_server_escaped_is_shown_as_its_character(before: str, after: str,
                                                               cuts: list[int]) -> None:
    text = f"{before}it&#39;s{after}"
    shown = shown_while_streaming(text, cuts, tools=False)
    assert "&#39;" not in shown
    assert f"{before}it's{after}".lstrip().startswith(shown)


@settings(max_examples=200, deadline=None)
@given(before=PLAIN, token=st.sampled_from(["<|im_end|>", "<|im_start|>", "<|eot_id|>",
                                            "<end_of_turn>", "</s>", "<tool_response>",
                                            "</tool_response>", "<tools>"]),
       cuts=st.lists(st.integers(0, 500), max_size=12))
def test_nothing_of_a_template_is_shown_while_streaming(before: str, token: str,
                                                        cuts: list[int]) -> None:
    text = f"{before}{token}\nhi{token}user"
    shown = shown_while_streaming(text, cuts, tools=False)
    assert token not in shown and not shown.endswith("<")
    assert before.lstrip().startswith(shown)
