"""Approval cards as plain text (channels/plain_cards.py): the one renderer the channels without
buttons share, every argument shown, several cards told apart by their codes, a pairing
request answered by its code."""

from __future__ import annotations

from bot.contracts.envelopes import ApprovalPrompt, OutboundMessage, PromptKind
from channels.plain_cards import argument_lines, card_in_words, cards_in_words, sentence
from channels.sms.render import render_prompts
from persona import load_persona
from persona.lines import DEFAULT
from persona.speaking import speaking_to
from tests.fakes.toy_channel.channel import rendered

EMAIL = ApprovalPrompt(id="ap1", code="4821", position=1, summary="send the email to Ana",
                       details=(("to", "ana@example.com"), ("subject", "Lunch"),
                                ("body", "See you at 1?")),
                       allow_modification=False)


def test_a_card_says_its_request_every_argument_and_how_to_answer():
    assert card_in_words(EMAIL, DEFAULT) == (
        "Send the email to Ana? Answer yes or no.\n"
        "to: ana@example.com\nsubject: Lunch\nbody: See you at 1?")


def test_an_argument_the_summary_says_word_for_word_is_not_repeated():
    prompt = ApprovalPrompt(id="ap2", code="5930", position=2, summary="Delete (note_id: 7)",
                            details=(("note_id", "7"), ("why", "done")))
    assert argument_lines(prompt) == ["why: done"]


def test_several_cards_carry_their_codes_and_a_pairing_its_own():
    pairing = ApprovalPrompt(id="K7QXZ4", code="K7QXZ4", position=3, summary="let Bo in",
                             kind=PromptKind.PAIRING)
    other = ApprovalPrompt(id="ap2", code="5930", position=2, summary="book a flight")
    said = cards_in_words((pairing, other, EMAIL), DEFAULT).splitlines()
    assert said[0] == "4821: Send the email to Ana? Answer yes or no."
    assert said[4] == "5930: Book a flight? Answer yes or no, or tell me what to change."
    assert "K7QXZ4" in said[5] and said[5].startswith("K7QXZ4: ")
    # SMS asks a pairing in the same words (its answers to approvals are its own: "1", codes).
    assert said[5].removeprefix("K7QXZ4: ") == render_prompts((pairing,), DEFAULT)


def test_the_card_is_said_in_the_listeners_language():
    lines = load_persona("default").lines
    with speaking_to("es"):
        said = card_in_words(EMAIL, lines)
    assert said.splitlines()[0] == "Send the email to Ana? Responde sí o no."
    assert said.endswith("to: ana@example.com\nsubject: Lunch\nbody: See you at 1?")


def test_the_toy_channel_writes_its_cards_with_the_shared_renderer():
    message = OutboundMessage(id=1, user_id="u1", channel="toy", address="ana", text="Before I go:",
                              prompts=(EMAIL,))
    assert rendered(message) == f"Before I go:\n{card_in_words(EMAIL, DEFAULT)}"


def test_a_long_summary_is_one_line_cut_with_dots():
    said = sentence("a " * 400, limit=50)
    assert len(said) == 50 and said.endswith("...") and "\n" not in said
