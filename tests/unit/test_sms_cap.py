"""The segment cap with no exception (issue 44): whatever the text (GSM-7, its extension
characters, UCS-2, emoji, long URLs, long words), whatever the limit from 1 to 10 and whatever
the message carries (text alone, one approval card, several, a pairing request, the rest kept
for MORE), no SMS is over the limit, as Twilio bills it (tests/fakes/sms_segments.py), and no
card loses its code or its answer. The MORE chain is followed to its end."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.contracts.envelopes import ApprovalPrompt, OutboundMessage, PromptKind
from channels.sms.render import render_capped
from persona.lines import DEFAULT
from tests.fakes.sms_segments import segments

pieces = st.one_of(
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz ABC.,!?\n", min_size=1, max_size=80),
    st.text(alphabet="€[]{}~^|\\ ", min_size=1, max_size=20),  # GSM-7 extension characters
    st.text(alphabet="жшщ日本語äöüñçé ", min_size=1, max_size=40),  # UCS-2 (and foldable)
    st.sampled_from(["🙂", "👍🏽", "🇫🇷", "𝄞", "👨‍👩‍👧"]),  # emoji, surrogate pairs, joiners
    st.integers(1, 3000).map(lambda n: "https://example.com/r?" + "x" * n),  # long URLs
    st.integers(1, 2000).map(lambda n: "W" * n),  # long words
    st.text(min_size=1, max_size=60),  # anything at all
)
texts = st.lists(pieces, max_size=8).map(" ".join)
summaries = st.one_of(st.text(max_size=400), texts.map(lambda t: t[:500]))


@st.composite
def prompts(draw: st.DrawFn) -> tuple[ApprovalPrompt, ...]:
    kind = draw(st.sampled_from(["none", "one", "several", "pairing"]))
    if kind == "none":
        return ()
    if kind == "pairing":
        return (ApprovalPrompt("K7M2Q4", "K7M2Q4", 1, "Let Ana in", kind=PromptKind.PAIRING),)
    count = 1 if kind == "one" else draw(st.integers(2, 8))
    return tuple(ApprovalPrompt(f"a{i}", f"{4820 + i}", i, draw(summaries),
                                allow_modification=draw(st.booleans()))
                 for i in range(1, count + 1))


def whole_answer(prompt: ApprovalPrompt, several: bool) -> list[str]:
    """What of a card must reach the person whole: its code and how to answer it."""
    if prompt.kind is PromptKind.PAIRING:
        return [f"{DEFAULT.pairing_approve_word} {prompt.code}",
                f"{DEFAULT.pairing_deny_word} {prompt.code}"]
    if several:  # the code, with how to answer by it, in the same message
        return [f"code {prompt.code}\n", "YES", "NO"]
    return ["Reply 1 to ", ", 2 to cancel"]


@settings(max_examples=400, deadline=None)
@given(text=texts, limit=st.integers(1, 10), asked=prompts(), emoji=st.booleans())
def test_no_sms_over_the_limit_and_no_card_cut(text, limit, asked, emoji):
    message = OutboundMessage(1, "u", "sms", "+12125550123", text, asked)
    sent: list[str] = []
    for _ in range(400):  # the person says MORE until nothing is left
        bodies, rest = render_capped(message, max_segments=limit, emoji=emoji)
        for body in bodies:
            billed = segments(body.text)
            assert billed.count <= limit, (limit, body.text)
            assert body.segments == billed.count
            sent.append(body.text)
        if not rest:
            break
        message = OutboundMessage(2, "u", "sms", message.address, rest)
    else:
        raise AssertionError("the MORE chain never ended")
    several = len([p for p in asked if p.kind is not PromptKind.PAIRING]) > 1
    for prompt in asked:
        answer = whole_answer(prompt, several)
        assert any(all(words in body for words in answer) for body in sent), (answer, sent)
