"""Issue 45 items 4 and 5 and issue 43 item 4, on the answers a real llama.cpp server gave
(tests/recordings/real_llamacpp/): the fake server plays each recorded answer back exactly
(status, body, its extra fields; streamed as llama.cpp streams), to the recorded request,
through the real `openai` client and the LLM port, whole and streamed. Nothing of a template
reaches a person, a `<tool_call>` inside a sentence is a word, an imitated result is flagged
so the person is told nothing was done."""

from __future__ import annotations

from typing import Any

import pytest

from bot.llm.openai_client import OpenAILLM
from bot.llm.port import LLMResponse
from bot.llm.quirks import Quirk
from tests.fakes.fake_openai import FakeOpenAI
from tests.fakes.recordings import answer_of, exchange, recorded

TEMPLATE = ("<|im_start|>", "<|im_end|>", "<|eot_id|>", "<end_of_turn>", "</s>",
            "<tool_response>", "</tool_response>", "<tools>", "</tools>", "<tool_call>",
            "</tool_call>", "&#39;", '"arguments"')


async def answered(fake: FakeOpenAI, llm: OpenAILLM, name: str, seq: int, streamed: bool
                   ) -> tuple[LLMResponse, str]:
    found = exchange(name, seq)
    fake.script(recorded(found))
    shown: list[str] = []

    async def on_text(chunk: str) -> None:
        shown.append(chunk)

    request: dict[str, Any] = found["request"]
    response = await llm.complete(request["messages"], request.get("tools"),
                                  on_text=on_text if streamed else None)
    assert fake.calls == 1
    live = "".join(shown)
    assert live.strip() in (response.content or "")  # never more than the reply
    return response, live


def never_shown(response: LLMResponse, live: str) -> None:
    for marker in TEMPLATE:
        assert marker not in (response.content or ""), marker
        assert marker not in live, marker


STREAMED = pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])


@STREAMED
async def test_a_tool_call_tag_inside_a_sentence_is_a_word(fake_llm, llm, streamed):
    response, live = await answered(fake_llm, llm, "unreadable_call_breaks_llamacpp", 35,
                                    streamed)
    assert response.tool_calls == []  # no call, so nothing unreadable goes back
    assert response.content is not None
    assert response.content.startswith("Theres no way to keep track of a function call")
    assert "use the options within to make it look like a function call" in response.content
    assert Quirk.CALL_IN_PROSE in response.quirks
    never_shown(response, live)


@STREAMED
@pytest.mark.parametrize("seq", [1, 2, 3, 6, 8, 14, 19])
async def test_an_imitated_tool_response_is_never_passed_off_as_a_result(
        fake_llm, llm, seq, streamed):
    response, live = await answered(fake_llm, llm, "tool_response_shown", seq, streamed)
    assert response.tool_calls == []
    assert Quirk.IMITATED_RESULT in response.quirks
    assert "Saved note" not in (response.content or "") and "Saved note" not in live
    assert "Removed the note" not in (response.content or "")
    never_shown(response, live)


@STREAMED
@pytest.mark.parametrize("seq", [32, 33, 37])
async def test_a_tool_response_block_is_an_imitation(fake_llm, llm, seq, streamed):
    response, live = await answered(fake_llm, llm, "tool_response_block", seq, streamed)
    assert response.content is None and response.tool_calls == []
    assert Quirk.IMITATED_RESULT in response.quirks
    assert not response.empty  # not asked again: the person is told nothing was done
    never_shown(response, live)


@STREAMED
async def test_the_same_server_s_native_call_is_read(fake_llm, llm, streamed):
    response, _ = await answered(fake_llm, llm, "tool_response_block", 29, streamed)
    assert [(c.name, c.arguments) for c in response.tool_calls] == [
        ("multiply", '{"a": 6, "b": 7}')]


@STREAMED
async def test_a_tools_tag_is_not_shown(fake_llm, llm, streamed):
    response, live = await answered(fake_llm, llm, "tools_tag_shown", 28, streamed)
    assert response.content is not None
    assert response.content.startswith("A: You can use the following script to save a note")
    never_shown(response, live)


@STREAMED
async def test_json_naming_no_offered_tool_is_not_shown(fake_llm, llm, streamed):
    response, live = await answered(fake_llm, llm, "bare_json_shown", 24, streamed)
    assert response.content is None and response.tool_calls == []
    assert Quirk.IMITATED_RESULT in response.quirks
    assert "buy_milk" not in live
    fake_llm.reset()
    response, live = await answered(fake_llm, llm, "bare_json_shown", 25, streamed)
    assert response.content == ('What is the code to delete a note that is marked with '
                                '"remove_item"?')
    never_shown(response, live)


@STREAMED
async def test_entities_a_server_escaped_are_read(fake_llm, llm, streamed):
    response, live = await answered(fake_llm, llm, "html_entities_shown", 9, streamed)
    assert response.content == ("A few hours ago, I was in Lyon and it's not a day. It is a "
                                "two-week vacation!")
    never_shown(response, live)


TEMPLATE_ANSWERS = {13: "Reply with the single word: ready", 16: "hi",
                    17: "what is five times six", 18: "what is three times seven"}


@STREAMED
@pytest.mark.parametrize("seq", sorted(TEMPLATE_ANSWERS))
async def test_template_tokens_end_the_answer(fake_llm, llm, seq, streamed):
    assert "<|im_end|>" in answer_of(exchange("template_tokens_shown_doctor_all_good", seq))
    response, live = await answered(fake_llm, llm, "template_tokens_shown_doctor_all_good",
                                    seq, streamed)
    assert response.content == TEMPLATE_ANSWERS[seq]
    assert Quirk.TEMPLATE_TOKENS in response.quirks
    never_shown(response, live)


async def test_a_recorded_stream_is_played_as_it_was_sent(fake_llm, llm):
    response, live = await answered(fake_llm, llm, "template_tokens_shown_doctor_all_good",
                                    14, True)
    never_shown(response, live)
    assert response.content and response.content.startswith("How many")
