"""A message held to sms.max_segments: cut after its last whole sentence that fits with the
note ("(reply MORE for the rest)"), never inside a URL, a GSM-7 escape or a surrogate pair,
never turning GSM-7 into UCS-2, the questions whole. Segments are checked against Twilio's
rules as the fake Twilio bills them (tests/fakes/sms_segments.py), not Valet's own count."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.contracts.envelopes import ApprovalPrompt, OutboundMessage
from channels.sms.cut import cut_to_fit
from channels.sms.render import render_capped
from persona.lines import DEFAULT, Lines
from tests.fakes.sms_segments import segments

NOTE = DEFAULT.sms_more
URL = re.compile(r"https?://\S+")

words = st.sampled_from(["plan", "Step", "€5", "[note]", "{a}", "über", "lunch", "call",
                         "https://example.com/a.b?c=d&e=f", "ok", "12:30", "ж", "𝄞", "é"])
sentence = st.lists(words, min_size=1, max_size=14).map(lambda w: " ".join(w) + ".")
texts = st.lists(sentence, min_size=1, max_size=60).map(" ".join)


@settings(max_examples=300, deadline=None)
@given(text=texts, limit=st.integers(min_value=1, max_value=10))
def test_a_cut_fits_ends_on_a_sentence_and_loses_nothing(text, limit):
    cut = cut_to_fit(text, "", limit, NOTE)
    if not cut.rest:
        assert cut.text == text and segments(text).count <= limit
        return
    billed = segments(cut.text)
    first = cut.text.removesuffix(" " + NOTE)
    first_sentence = text.split(". ")[0] + "."
    if segments(f"{first_sentence} {NOTE}").count <= limit:
        assert billed.count <= limit
        assert first.endswith(".")  # after a whole sentence
    assert cut.text.endswith(NOTE)
    assert f"{first} {cut.rest}" == text  # nothing lost, nothing repeated
    for url in URL.findall(text):  # a URL is on one side of the cut, whole
        assert url in first or url in cut.rest
    if segments(text).encoding == "GSM-7":
        assert billed.encoding == "GSM-7"


def test_an_extension_character_or_a_surrogate_pair_is_never_split_across_the_limit():
    # 152 septets then "€" (two): a cut at a septet boundary would split the escape.
    text = "a" * 150 + ". €€ b" * 30 + "."
    cut = cut_to_fit(text, "", 2, NOTE)
    assert segments(cut.text).count <= 2 and segments(cut.text).encoding == "GSM-7"
    ucs = " ".join(f"Шаг {i} 𝄞 займёт минут." for i in range(40))
    cut = cut_to_fit(ucs, "", 3, NOTE)
    billed = segments(cut.text)
    assert billed.encoding == "UCS-2" and billed.count <= 3
    assert cut.text.encode("utf-16-le").decode("utf-16-le") == cut.text  # whole pairs


def test_a_note_that_would_need_ucs2_is_folded_so_a_gsm7_message_stays_gsm7():
    text = " ".join(f"Sentence {i} is plain." for i in range(60))
    cut = cut_to_fit(text, "", 3, "(répondez “PLUS” pour la suite 🙂)")
    assert segments(cut.text).encoding == "GSM-7" and segments(cut.text).count <= 3
    assert cut.text.endswith('(répondez "PLUS" pour la suite )')  # é is GSM-7; 🙂 is not


def test_the_question_goes_whole_after_the_note():
    text = " ".join(f"Sentence {i} explains a part." for i in range(40))
    tail = "Send the email to Ana? Reply 1 to send, 2 to cancel."
    cut = cut_to_fit(text, tail, 3, NOTE)
    assert cut.text.endswith(f"{NOTE}\n{tail}") and segments(cut.text).count <= 3
    assert cut.rest.startswith("Sentence")


def test_a_question_too_long_for_the_limit_is_cut_all_the_same_the_cap_has_no_exception():
    # (The renderer never makes such a card: it shortens the summary, channels.sms.render.)
    tail = "Send it? " + "x" * 400
    cut = cut_to_fit("A short text.", tail, 1, NOTE)
    assert segments(cut.text).count <= 1 and cut.rest
    assert cut.text.startswith("A short text.")


def test_a_first_sentence_too_long_alone_is_cut_at_a_space_and_a_url_goes_whole():
    url = "https://example.com/" + "p" * 100  # fits one message (a longer one: below)
    text = "word " * 40 + url + " and more words follow here " * 10 + "."
    cut = cut_to_fit(text, "", 1, NOTE)
    first = cut.text.removesuffix(" " + NOTE)
    assert text.startswith(first) and segments(cut.text).count <= 1
    assert url in cut.rest
    long_url = "https://example.com/" + "p" * 400  # longer than any one message can be
    alone = cut_to_fit(long_url + " then words " * 30, "", 1, NOTE)
    assert segments(alone.text).count <= 1
    assert alone.text.startswith(DEFAULT.sms_link_elsewhere)  # never broken: not sent at all
    assert "ppp" not in alone.text + alone.rest


def test_the_persona_words_the_note():
    lines = Lines(sms_more="(say MORE, sir, and I shall continue)")
    message = OutboundMessage(1, "u", "sms", "+1", " ".join(f"Point {i}." for i in range(200)))
    bodies, rest = render_capped(message, max_segments=2, lines=lines)
    [body] = bodies
    assert body.text.endswith("(say MORE, sir, and I shall continue)") and body.segments <= 2
    assert rest.startswith("Point")


def test_a_prompt_rendered_with_its_message_is_kept_whole():
    prompt = ApprovalPrompt("a1", "4821", 1, "Send the email to Ana")
    message = OutboundMessage(1, "u", "sms", "+1", " ".join(f"Point {i}." for i in range(200)),
                              (prompt,))
    [body], rest = render_capped(message, max_segments=3)
    assert body.text.endswith("Send the email to Ana? Reply 1 to send, 2 to cancel, or tell "
                              "me what to change.")
    assert NOTE in body.text and body.segments <= 3 and rest
