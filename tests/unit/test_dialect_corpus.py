"""Every recorded answer in dialect_corpus/ (one file per dialect and case, with where the
form comes from) through the LLM port: the real `openai` client, the fake server sending the
message exactly as recorded, answered whole and streamed in pieces of 1, 3 and 7 characters
(so every tag is split across chunks at some point)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from bot.llm.openai_client import OpenAILLM
from bot.llm.port import LLMResponse
from bot.llm.quirks import Quirk
from tests.fakes.fake_openai import FakeOpenAI, Reply

CORPUS = Path(__file__).parent / "dialect_corpus"
CASES = sorted(CORPUS.glob("*.json"))
# What a person must never read, streamed or not.
MARKUP = ("<tool_call>", "</tool_call>", "[TOOL_CALLS]", "<|python_tag|>", "<function=",
          "<parameter=", "<think", "</think", "<thinking", "<reasoning", "<Reasoning",
          '"arguments"', '"parameters"', "[ARGS]", "<|eom_id|>")


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def tools(names: list[str]) -> list[dict[str, Any]]:
    return [{"type": "function", "function": {
        "name": name, "description": "A tool.",
        "parameters": {"type": "object", "properties": {"expression": {"type": "string"}}}}}
        for name in names]


def asked_again(case: dict[str, Any]) -> bool:
    expect = case["expect"]  # (an imitation is not empty: the person is told nothing ran)
    return expect["content"] is None and not expect["calls"] \
        and "imitated_result" not in expect["quirks"]


def script(fake: FakeOpenAI, case: dict[str, Any], chunk_size: int | None = None) -> None:
    reply = Reply(message=case["message"], finish_reason=case["finish_reason"],
                  chunk_size=chunk_size)
    fake.script(*([reply, reply] if asked_again(case) else [reply]))


def check(response: LLMResponse, case: dict[str, Any], fake: FakeOpenAI) -> None:
    expect = case["expect"]
    assert response.content == expect["content"]
    assert len(response.tool_calls) == len(expect["calls"])
    for call, wanted in zip(response.tool_calls, expect["calls"], strict=True):
        assert call.name == wanted["name"]
        if wanted.get("invalid_arguments"):
            with pytest.raises(json.JSONDecodeError):
                json.loads(call.arguments)
        else:
            assert json.loads(call.arguments) == wanted["arguments"]
        if "id" in wanted:
            assert call.id == wanted["id"]
        else:  # generated: the one id shape every server takes back
            assert re.fullmatch(r"[A-Za-z0-9]{9}", call.id)
    if expect["reasoning_contains"]:
        assert expect["reasoning_contains"] in (response.reasoning or "")
    assert set(expect["quirks"]) <= set(response.quirks)
    if asked_again(case):  # an empty answer is asked once more, its tokens counted
        assert fake.calls == 2 and response.requests == 2
        assert Quirk.ASKED_AGAIN in response.quirks
    else:
        assert fake.calls == 1 and response.requests == 1
    if response.content != case["message"]["content"]:  # read, not passed on as written
        assert not any(m in (response.content or "") for m in MARKUP)


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
async def test_a_recorded_answer_is_read(path: Path, fake_llm: FakeOpenAI, llm: OpenAILLM):
    case = load(path)
    assert case["source"] and case["dialect"] and case["case"]
    script(fake_llm, case)
    response = await llm.complete([{"role": "user", "content": "what is six times seven"}],
                                  tools(case["offered"]))
    check(response, case, fake_llm)


@pytest.mark.parametrize("chunk_size", [1, 3, 7])
@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
async def test_a_recorded_answer_streamed_in_pieces_is_read_the_same_and_shows_no_markup(
        path: Path, chunk_size: int, fake_llm: FakeOpenAI, llm: OpenAILLM):
    case = load(path)
    # As the port knows the model by now (bot.llm.visible): one that thinks aloud in the text
    # is shown nothing before a closing tag.
    llm.thought_first = bool({"think_unopened", "think_blocks"} & set(case["expect"]["quirks"]))
    script(fake_llm, case, chunk_size)
    shown: list[str] = []

    async def on_text(chunk: str) -> None:
        shown.append(chunk)

    response = await llm.complete([{"role": "user", "content": "what is six times seven"}],
                                  tools(case["offered"]), on_text=on_text)
    check(response, case, fake_llm)
    streamed = "".join(shown).strip()
    assert streamed in (response.content or "")  # only what is said, never more
    if response.content and not response.tool_calls and response.content[0] not in "{[`":
        assert streamed  # an answer is shown as it comes (one that starts like JSON: whole)


async def test_a_first_streamed_answer_waits_until_the_model_is_known(
        fake_llm: FakeOpenAI, llm: OpenAILLM):
    """A model that writes its thinking with no opening tag cannot be told from one that does
    not until an answer ends: the first answer is not shown early (the reply brings it)."""
    shown: list[str] = []

    async def on_text(chunk: str) -> None:
        shown.append(chunk)

    fake_llm.script(Reply(content="Six times seven is 42.", chunk_size=3),
                    Reply(content="Anything else?", chunk_size=3))
    first = await llm.complete([{"role": "user", "content": "6*7?"}], None, on_text=on_text)
    assert first.content == "Six times seven is 42." and shown == []
    assert llm.thought_first is False
    await llm.complete([{"role": "user", "content": "6*7?"}], None, on_text=on_text)
    assert "".join(shown) == "Anything else?"


async def test_thinking_without_an_opening_tag_is_never_shown(fake_llm: FakeOpenAI,
                                                               llm: OpenAILLM):
    case = load(CORPUS / "think_unopened.json")
    shown: list[str] = []

    async def on_text(chunk: str) -> None:
        shown.append(chunk)

    for _ in range(2):  # before the port knows the model, and after
        shown.clear()
        script(fake_llm, case, 3)
        answer = await llm.complete([{"role": "user", "content": "6*7?"}], None,
                                    on_text=on_text)
        assert answer.content == "Six times seven is 42."
        assert "".join(shown) == "Six times seven is 42."
        assert llm.thought_first is True
