"""The meter (issue 44) against a real `valet serve` (SQLite), the fake Twilio REST server
(which bills segments by Twilio's rules) and the fake LLM: the red team's cases, each within
its bound, and, after each, what the fake Twilio took is exactly what the meter let out.

- a blocked person's HELP and pictures get nothing;
- HELP and /help over the allowance: at most what the allowance and one message allow, and
  `valet budget list` counts them;
- two timezone moves (set_my_timezone, as the model calls it) give no fresh allowance;
- a long link is not sent by SMS, alone or after MORE: a line says where to read it;
- eight approval cards in one reply: one a message within the cap, code and answer whole.
"""

from __future__ import annotations

import json
import sqlite3

from tests.e2e.test_console_pipe import run_valet
from tests.e2e.test_sms_cost import ALICE, LINES, Served, serving
from tests.fakes.fake_openai import Reply, ToolCall
from tests.fakes.sms_segments import segments

ALLOW = f"access:\n  channels:\n    sms: {{policy: allowlist, allow: ['{ALICE}']}}\n"
PICTURE = ["https://api.twilio.com/2010-04-01/Accounts/AC1/Messages/MM1/Media/ME1"]
# A call's worst cost is about its prompt's tokens at $1 a million plus 50 answer tokens at
# $1,000 a million: a little over $0.05. The fake bills 100 + 50 tokens: $0.0501.
PRICED = ("llm:\n  max_output_tokens: 50\n  prices:\n    fake-model: {input: 1, output: 1000}\n"
          "sms:\n  price_per_segment: 0.01\n")


def metered(served: Served) -> tuple[int, int]:
    """What the meter let out by SMS: (SMS, segments)."""
    with sqlite3.connect(served.db) as db:
        parts, billed = db.execute(
            "SELECT COALESCE(SUM(parts), 0), COALESCE(SUM(segments), 0) FROM meter_ledger"
            " WHERE channel = 'sms' AND outbox_id IS NOT NULL").fetchone()
    return int(parts), int(billed)


def assert_all_metered(served: Served) -> None:
    """Nothing reached Twilio but through the meter: the fake counts what the meter counts."""
    sent = served.twilio.sent
    assert metered(served) == (len(sent), sum(m.segments for m in sent))
    for message in sent:
        assert message.segments == segments(message.body).count


def spent(served: Served) -> float:
    with sqlite3.connect(served.db) as db:
        total = db.execute("SELECT COALESCE(SUM(llm_micros + messages_micros), 0)"
                           " FROM meter_ledger").fetchone()[0]
    return int(total) / 1_000_000


async def test_a_blocked_person_gets_nothing_for_help_or_pictures(fake_llm, tmp_path):
    fake_llm.script(Reply(content="Hello Ana."))
    async with serving(tmp_path, fake_llm, ALLOW) as served:
        await served.text(ALICE, "hi")
        await served.quiet()
        assert served.twilio.bodies_to(ALICE) == ["Hello Ana."]
        code, out, err = await run_valet(["users", "block", f"sms:{ALICE}"], served.env)
        assert code == 0 and "blocked" in out, err
        for _ in range(10):
            await served.text(ALICE, "HELP")
            await served.text(ALICE, "", media=PICTURE)
            await served.text(ALICE, "info")
        await served.quiet()
        assert served.twilio.bodies_to(ALICE) == ["Hello Ana."]
        assert fake_llm.calls == 1
        assert_all_metered(served)


async def test_help_is_answered_once_a_while_and_nothing_goes_past_the_allowance(
        fake_llm, tmp_path):
    config = PRICED + "budget:\n  daily_usd: 0.10\n" + ALLOW
    fake_llm.script(Reply(content="Hello Ana.", usage=(100, 50)))  # $0.0501, and its SMS
    async with serving(tmp_path, fake_llm, config) as served:
        await served.text(ALICE, "hi")
        await served.quiet()
        for _ in range(10):  # under the budget: HELP once per sms.door_reply_minutes
            await served.text(ALICE, "HELP")
            await served.text(ALICE, "", media=PICTURE)
        await served.quiet()
        bodies = served.twilio.bodies_to(ALICE)
        assert sorted(bodies) == sorted(["Hello Ana.", LINES.sms_help,
                                         LINES.sms_picture_only]), bodies
        for _ in range(30):  # $0.08 spent: /help answers until the budget, then nothing
            await served.text(ALICE, "/help")
            await served.text(ALICE, "HELP")
        await served.quiet()
        assert fake_llm.calls == 1
        # Each message's price counted before it goes: the budget and one message at most.
        assert spent(served) <= 0.10 + 0.01 * 3, spent(served)
        assert len(served.twilio.sent) <= 3 + 2, served.twilio.bodies_to(ALICE)
        code, out, err = await run_valet(["budget", "list"], served.env)
        assert code == 0, err
        assert f"${spent(served):.2f}" in out, out  # door replies and commands counted
        assert_all_metered(served)


async def test_two_timezone_moves_give_no_fresh_allowance(fake_llm, tmp_path):
    config = PRICED + "budget:\n  daily_usd: 0.20\n  check_seconds: 3600\n" + ALLOW
    fake_llm.script(
        Reply(tool_calls=[ToolCall("set_my_timezone", {"timezone": "Pacific/Kiritimati"})],
              usage=(100, 50)),
        Reply(content="Done: Kiritimati.", usage=(100, 50)),
        Reply(tool_calls=[ToolCall("set_my_timezone", {"timezone": "Etc/GMT+12"})],
              usage=(100, 50)),
        *(Reply(content=f"Answer {i}.", usage=(100, 50)) for i in range(20)))
    async with serving(tmp_path, fake_llm, config) as served:
        await served.text(ALICE, "I'm in Kiritimati now")
        await served.quiet()
        await served.text(ALICE, "actually I'm at GMT-12")
        await served.quiet()
        for i in range(12):
            await served.text(ALICE, f"question {i}")
        await served.until("she is told", lambda: LINES.budget_reached in
                           served.twilio.bodies_to(ALICE))
        await served.quiet()
        with sqlite3.connect(served.db) as db:
            [zone] = db.execute("SELECT timezone FROM users WHERE NOT is_owner").fetchone()
        assert zone == "Etc/GMT+12"  # both moves were made
        # The budget, plus the one call that may pass it, plus the messages that told her.
        worst_call = 0.06
        assert spent(served) <= 0.20 + worst_call, spent(served)
        assert fake_llm.calls <= 4
        bodies = served.twilio.bodies_to(ALICE)
        assert bodies.count(LINES.budget_reached) == 1
        assert len([b for b in bodies if b.startswith("Answer")]) <= 1
        assert_all_metered(served)


async def test_a_long_link_is_never_sent_by_sms_alone_or_after_more(fake_llm, tmp_path):
    link = "https://maps.example.com/route?stops=" + "x1y2z3" * 440  # 2,668 characters
    prose = " ".join(f"Step {i}: walk to the next corner and turn left." for i in range(20))
    fake_llm.script(Reply(content=link), Reply(content=link),
                    Reply(content=f"Here is your route: {prose} {link}"),
                    Reply(content=f"Here is your route: {prose} {link}"))
    async with serving(tmp_path, fake_llm, ALLOW) as served:
        await served.text(ALICE, "the route?")
        await served.quiet()
        [alone] = served.twilio.bodies_to(ALICE)
        assert segments(alone).count <= 3 and "x1y2z3" not in alone
        assert LINES.sms_link_elsewhere in alone
        await served.text(ALICE, "the route with the steps?")
        await served.quiet()
        while served.twilio.bodies_to(ALICE)[-1].endswith(LINES.sms_more):
            assert len(served.twilio.sent) < 12
            await served.text(ALICE, "MORE")
            await served.quiet()
        after = served.twilio.bodies_to(ALICE)[1:]
        assert len(after) >= 2  # the steps, then the rest after MORE
        assert all(segments(b).count <= 3 for b in after)
        assert not any("x1y2z3" in b for b in after)
        assert LINES.sms_link_elsewhere in after[-1]
        assert_all_metered(served)


async def test_eight_cards_in_one_reply_go_one_a_message_within_the_cap(fake_llm, tmp_path):
    registry = tmp_path / "risky.yaml"
    registry.write_text("tools:\n  - module: tests.fakes.risky_tools\n    only: [send_email]\n"
                        "    approval: always\n")
    subjects = [f"Quarterly report {i}: " + "the figures for every team, region and product "
                "line, with the notes from the review meeting and the plan " * 2
                for i in range(8)]
    fake_llm.script(Reply(tool_calls=[ToolCall("send_email", {"to": f"t{i}@corp.example",
                                                              "subject": s})
                                      for i, s in enumerate(subjects)]))
    async with serving(tmp_path, fake_llm, ALLOW, VALET_AGENTS_FILES=str(registry)) as served:
        await served.text(ALICE, "email the eight reports")
        await served.quiet()
        while LINES.sms_more in served.twilio.bodies_to(ALICE)[-1]:
            assert len(served.twilio.sent) < 20
            await served.text(ALICE, "MORE")
            await served.quiet()
        bodies = served.twilio.bodies_to(ALICE)
        assert all(segments(b).count <= 3 for b in bodies), [segments(b) for b in bodies]
        with sqlite3.connect(served.db) as db:
            [payload] = db.execute("SELECT payload FROM outbox WHERE payload LIKE '%prompts%'"
                                   ).fetchone()
        codes = [p["code"] for p in json.loads(payload)["prompts"]]
        assert len(codes) == 8
        for code in codes:  # each card whole: its code, with how to answer by it
            [card] = [b for b in bodies if f"code {code}\n" in b]
            assert f"Reply {code} YES" in card and f"{code} NO" in card
        assert len(bodies) == 8
        assert_all_metered(served)
