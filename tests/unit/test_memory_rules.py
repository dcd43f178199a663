"""What the extractor is given and what it may answer: turns with nothing to learn cost no
call, and its JSON is read defensively."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bot.contracts.envelopes import ButtonPress, Inbound, TurnStop
from bot.contracts.people import User
from bot.contracts.tool_context import ToolExecutionContext
from bot.contracts.turn import ComposedTurn, TurnContext
from bot.memory.extract import ExtractionAnswerError, NewFact, parse_answer, worth_learning
from bot.memory.facts import Kind, search_terms

NOW = datetime(2026, 1, 5, 9, tzinfo=UTC)


def _turn(text: str, *, stop: TurnStop = TurnStop.FINAL_ANSWER, button: bool = False,
          trigger: str | None = None, settled: tuple[str, ...] = (),
          tools: tuple[str, ...] = ()) -> tuple[TurnContext, ComposedTurn]:
    msg = Inbound("u1", "test", text, NOW, button=ButtonPress("a1", "approve") if button
                  else None, from_trigger=trigger)
    user = User(id="u1", display_name="", timezone="UTC", is_owner=False, blocked=False)
    ctx = TurnContext(msg, user, "turn-1", "", [], ToolExecutionContext(user_id="u1"))
    stored = [{"role": "user", "content": text}]
    if tools:
        stored.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{i}", "type": "function", "function": {"name": n, "arguments": "{}"}}
            for i, n in enumerate(tools)]})
    return ctx, ComposedTurn(stored, "ok", (), stop, settled)


@pytest.mark.parametrize("text", ["My daughter is Mia, she's 7", "I'm vegetarian",
                                  "we moved to Lisbon", "Je suis végétarien, moi"])
def test_a_person_speaking_of_themselves_is_worth_learning(text):
    assert worth_learning(*_turn(text))


@pytest.mark.parametrize("turn", [
    _turn("Hi!"), _turn("thanks, great"), _turn("what is 17*3?"),
    _turn("/memory", stop=TurnStop.COMMAND), _turn("I cancel", stop=TurnStop.CANCELLED),
    _turn("yes I approve", settled=("a1",)), _turn("I approve", button=True),
    _turn("[Scheduled Task] my morning summary", trigger="t1"),
    _turn("remember my sister is Ana", tools=("remember",))])
def test_turns_with_nothing_to_learn_cost_no_call(turn):
    assert not worth_learning(*turn)


def test_the_extractors_answer_is_read_defensively():
    answer = '```json\n{"facts": [{"text": " Lives in  Lisbon ", "kind": "fact", ' \
             '"replaces": [3, "x"]}, {"text": "Likes tea", "kind": "mood", "same_as": 4},' \
             ' {"kind": "fact"}, "junk"]}\n```'
    assert parse_answer(answer) == [NewFact("Lives in Lisbon", Kind.FACT, (3,)),
                                    NewFact("Likes tea", Kind.FACT, (), 4)]
    assert parse_answer('{"facts": []}') == []
    for bad in ["Sure! Here are the facts.", '{"facts": "none"}', "{not json}", None]:
        with pytest.raises(ExtractionAnswerError):
            parse_answer(bad)


def test_search_terms_drop_stopwords_and_keep_only_words():
    assert search_terms("What should I get Mia for her 7th birthday?!") == \
        ["get", "mia", "7th", "birthday"]
    assert search_terms('"; DROP TABLE -- OR *') == ["drop", "table"]


def test_memory_settings_are_checked_with_the_rest(tmp_path):
    from bot.config import ConfigError, load_settings

    path = tmp_path / "valet.yaml"
    path.write_text("memory:\n  recall_budget_tokens: 0\n  embedding_model: ''\n"
                    "  extraction_modle: small\n")
    with pytest.raises(ConfigError) as err:
        load_settings(str(path), env={})
    said = "\n".join(err.value.lines)
    assert "memory.recall_budget_tokens" in said and "must be more than 0" in said
    assert "memory.embedding_model" in said
    assert "did you mean extraction_model?" in said
    path.write_text("memory:\n  embedding_model: nomic-embed-text\n")
    memory = load_settings(str(path), env={}).memory
    assert memory.enabled and memory.embedding_model == "nomic-embed-text"
    assert memory.recall_budget_tokens == 300 and memory.extraction_model is None
