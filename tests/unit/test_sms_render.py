"""SMS text: plain, GSM-7 when it can be, split on sentences, costed per message."""

from __future__ import annotations

from bot.contracts.envelopes import ApprovalPrompt, OutboundMessage
from channels.sms.gsm import Encoding, cost, fold, is_gsm
from channels.sms.render import RESERVED_WORDS, plain_text, render, split_messages


def sms(text: str, *prompts: ApprovalPrompt, emoji: bool = False) -> list[str]:
    return [b.text for b in render(OutboundMessage(1, "u", "sms", "+1", text, prompts),
                                   emoji=emoji)]


def test_markdown_becomes_plain_text_with_readable_links():
    text = plain_text("## Plan\n**Bold** and *soft* and snake_case_name stay; see "
                      "[the docs](https://docs.example/a) or <https://x.example>.\n\n\n"
                      "* one\n- two\n`code` here")
    assert text == ("Plan\nBold and soft and snake_case_name stay; see the docs "
                    "(https://docs.example/a) or https://x.example.\n\n- one\n- two\ncode here")


def test_a_link_whose_label_is_its_address_is_written_once():
    assert plain_text("[example.com](https://example.com)") == "https://example.com"


def test_smart_punctuation_folds_to_gsm7_when_the_rest_is_gsm7():
    folded = fold("“Quoted” – it’s… here\u00a0now — café")
    assert folded == '"Quoted" - it\'s... here now - café'
    assert is_gsm(folded) and cost(folded) .encoding is Encoding.GSM7


def test_text_that_needs_ucs2_anyway_keeps_its_characters():
    assert fold("Привет, “мир”") == "Привет, “мир”"
    assert cost("Привет").encoding is Encoding.UCS2


def test_segments_follow_the_gsm7_and_ucs2_limits():
    assert cost("a" * 160).segments == 1 and cost("a" * 161).segments == 2
    assert cost("a" * 306).segments == 2 and cost("a" * 307).segments == 3
    assert cost("€" * 80).segments == 1  # extension characters count twice
    assert cost("€" * 81).segments == 2
    assert cost("ж" * 70).segments == 1 and cost("ж" * 71).segments == 2
    assert cost("").segments == 0


def test_emoji_are_dropped_unless_the_persona_allows_them():
    assert sms("Done 🎉! See you 👋") == ["Done! See you"]
    [kept] = render(OutboundMessage(1, "u", "sms", "+1", "Done 🎉!"), emoji=True)
    assert kept.text == "Done 🎉!" and kept.encoding is Encoding.UCS2


def test_long_text_is_split_on_sentence_boundaries_within_1600_characters():
    text = " ".join(f"Sentence number {i} is here." for i in range(150))
    parts = split_messages(text)
    assert len(parts) == 3 and all(len(p) <= 1600 for p in parts)
    assert all(p.endswith("here.") for p in parts) and " ".join(parts) == text


def test_a_message_ends_at_a_full_stop_rather_than_after_a_later_colon():
    # Packed as tightly as it goes, the first message would end after "Note:", with what the
    # note says in the next one; the full stop 150 characters earlier reads better.
    first = "a" * 1300 + ". " + "The next part is a clause that runs on and on" + "b" * 104
    text = first + " Note: " + "the thing to remember goes on " * 20 + "and ends here."
    parts = split_messages(text)
    assert all(len(p) <= 1600 for p in parts)
    assert parts[0] == "a" * 1300 + "."
    assert parts[1].startswith("The next part") and "Note: the thing" in parts[1]
    assert " ".join(parts) == text.strip()


def test_a_sentence_longer_than_a_message_is_cut_between_words():
    text = "word " * 500
    parts = split_messages(text.strip())
    assert all(len(p) <= 1600 for p in parts)
    assert " ".join(parts) == text.strip()


def test_folding_that_lengthens_text_still_fits_the_limit():
    text = "Wait… " * 300  # each "…" becomes "..."
    parts = sms(text.strip())
    assert all(len(p) <= 1600 for p in parts) and all(is_gsm(p) for p in parts)


def prompt(position: int, code: str, summary: str, **kw) -> ApprovalPrompt:
    return ApprovalPrompt(f"a{position}", code, position, summary, **kw)


def test_one_prompt_asks_for_1_or_2_in_the_requests_own_verb():
    [text] = sms("Before I go ahead, I need your OK:",
                 prompt(1, "4821", "delete note (title: Dentist)", allow_modification=False))
    assert text == ("Before I go ahead, I need your OK:\nDelete note (title: Dentist)? "
                    "Reply 1 to delete, 2 to cancel.")


def test_a_reserved_first_word_is_not_offered_as_the_answer_verb():
    [text] = sms("", prompt(1, "4821", "stop the timer", allow_modification=False))
    assert text == "Stop the timer? Reply 1 to go ahead, 2 to cancel."


def test_several_prompts_show_codes_and_never_a_bare_reserved_word():
    [text] = sms("OK?", prompt(1, "4821", "send email"), prompt(2, "5930", "book flight"))
    assert text.splitlines() == ["OK?", "1) Send email - code 4821", "2) Book flight - code 5930",
                                 'Reply with a code and YES or NO for each, e.g. '
                                 '"4821 YES 5930 NO".']
    for word in RESERVED_WORDS:
        assert f"Reply {word}" not in text and f'"{word}"' not in text
