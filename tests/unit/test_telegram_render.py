"""Rendering the LLM's markdown for Telegram, and splitting it after rendering: every part is
HTML the (fake) Bot API accepts, within 4,096 visible characters."""

from __future__ import annotations

import pytest

from bot.contracts.envelopes import ApprovalPrompt
from channels.telegram.kinds import callback_data, normalise_command, parse_callback
from channels.telegram.render import (
    MAX_MESSAGE_CHARS,
    markdown_to_html,
    message_html,
    message_parts,
    split_html,
    split_plain,
    visible_length,
)
from tests.fakes.fake_telegram import parse_html


def test_light_markdown_becomes_telegram_html_and_everything_else_is_escaped():
    rendered = markdown_to_html(
        "# Plan\n**Bold** _it_ ~~gone~~ `a<b` [site](https://x.example/?a=1&b=2)\n\n"
        "- one\n- two\n\n1. first\n2. second\n\n```py\nif a < b: print('&')\n```")
    assert rendered == (
        "<b>Plan</b>\n\n<b>Bold</b> <i>it</i> <s>gone</s> <code>a&lt;b</code> "
        '<a href="https://x.example/?a=1&amp;b=2">site</a>\n\n• one\n• two\n\n1. first\n'
        "2. second\n\n<pre><code class=\"language-py\">if a &lt; b: print('&amp;')</code></pre>")
    assert parse_html(rendered)  # the Bot API accepts it


@pytest.mark.parametrize("text", [
    "a < b & c > d", "**never closed", "`unclosed code <b>", "<script>alert(1)</script>",
    "[x](javascript:alert(1))", "&amp; already escaped?", "* * *", "> quote\n\n```\nopen fence"])
def test_hostile_or_broken_markdown_still_renders_to_valid_html(text):
    parse_html(markdown_to_html(text))


def test_a_link_with_an_unsafe_scheme_is_not_a_link():
    assert "<a" not in markdown_to_html("[x](javascript:alert(1))")


def test_a_long_answer_is_split_into_valid_parts_within_the_limit():
    text = "\n\n".join(f"Paragraph {i} with <tags> & ampersands " * 8 for i in range(40))
    parts = split_html(markdown_to_html(text))
    assert len(parts) > 1
    for part in parts:
        assert visible_length(parse_html(part)) <= 4096
    joined = " ".join(parse_html(p) for p in parts)
    assert joined.split() == text.split()


def test_a_code_block_cut_by_a_split_is_closed_and_reopened():
    code = "\n".join(f"x{i} = {i} < {i + 1}" for i in range(600))
    parts = split_html(markdown_to_html(f"Here:\n\n```python\n{code}\n```"), limit=2000)
    assert len(parts) >= 5
    for part in parts[1:]:
        assert part.startswith('<pre><code class="language-python">')
        assert part.endswith("</code></pre>")
        parse_html(part)
    assert "\n".join(parse_html(p) for p in parts).count("<") == 600


def test_escaping_never_pushes_a_part_over_the_limit():
    rendered = markdown_to_html("&" * 5000)
    assert len(rendered) == 5 * 5000  # each & became &amp;
    parts = split_html(rendered)
    assert [visible_length(parse_html(p)) for p in parts] == [4096, 904]


def test_plain_text_fallback_splits_at_whitespace():
    parts = split_plain("word " * 2000)
    assert all(len(p) <= 4096 for p in parts) and len(parts) == 3
    assert all(not p.startswith(" ") and not p.endswith(" ") for p in parts)


def test_an_approval_prompt_shows_its_summary_and_every_argument_escaped():
    prompt = ApprovalPrompt(id="a1", code="1234", position=1, summary="Email <team>",
                            details=(("to", "a&b@example.com"), ("subject", "Q3 <draft>")))
    rendered = message_html("Shall I?", (prompt,))
    assert parse_html(rendered) == ("Shall I?\n\n🔸 Email <team>\nto: a&b@example.com\n"
                                    "subject: Q3 <draft>")


def test_callback_data_carries_the_approval_id_and_option_within_64_bytes():
    data = callback_data("apr_" + "f" * 32, "approve")
    assert len(data.encode()) <= 64
    assert parse_callback(data) == ("apr_" + "f" * 32, "approve")
    assert parse_callback("1") is None and parse_callback(None) is None
    with pytest.raises(ValueError):
        callback_data("x" * 80, "approve")


@pytest.mark.parametrize(("text", "expected"), [
    ("/start link-AB12", "/link AB12"), ("/start", "/start"), ("/help@valet_bot", "/help"),
    ("/pending", "/pending"), ("/stop@other_bot", None), ("hello", "hello")])
def test_commands_pass_through_as_text(text, expected):
    assert normalise_command(text, "valet_bot") == expected


async def test_a_long_reply_is_rendered_off_the_loop_to_the_same_html():
    from channels.telegram.adapter import INLINE_RENDER_CHARS, rendered

    text = "**bold** and _it_ " * 1500 + "`code` *_*_ [a](https://example.com)"
    assert len(text) > INLINE_RENDER_CHARS  # the worker's path
    parts = await rendered(text, ())
    assert parts == message_parts(text, ())
    assert len(parts) > 1
    assert all(visible_length(parse_html(p)) <= MAX_MESSAGE_CHARS for p in parts)


def test_a_long_code_block_is_split_at_line_ends():
    lines = [f"line {i:03d} " + "x = compute(a, b, c) " * 3 for i in range(150)]
    text = "Here is the script:\n\n```\n" + "\n".join(lines) + "\n```\n\nThat's all."
    parts = split_html(markdown_to_html(text))
    assert len(parts) >= 3
    shown = [parse_html(p) for p in parts]
    assert all(visible_length(s) <= MAX_MESSAGE_CHARS for s in shown)
    code = [line for s in shown for line in s.splitlines() if line.startswith("line ")]
    assert [c.rstrip() for c in code] == [line.rstrip() for line in lines]  # no line cut
    assert all(p.count("<pre>") == p.count("</pre>") for p in parts)
