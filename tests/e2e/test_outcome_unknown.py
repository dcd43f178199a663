"""Issue [truth] 1, the kill -9 case: Sam approves "text Ana that I'm late", and `valet serve`
is killed while the SMS to Ana is in flight (the fake Twilio holds it open). After the
restart the outbox row is "outcome unknown", and so is the approval: Sam is told once what to
check ("Ana may not have received it; ask her before I send it again") with the same message
offered again as a card; the model reads the same at Sam's next turn; `valet approvals list`
says "outcome unknown"; nothing is sent on its own. Sam on SMS, and Sam on Telegram (where
the approved card, edited "Done" before, is edited again).

Real `valet serve` processes, the real twilio and python-telegram-bot libraries against the
fakes."""

from __future__ import annotations

import asyncio
import signal
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp

from tests.e2e.test_console_pipe import ROOT, clean_env, run_valet
from tests.e2e.test_serve import _until_up
from tests.fakes.fake_openai import FakeOpenAI, Reply, ToolCall
from tests.fakes.fake_telegram import TOKEN, FakeTelegram
from tests.fakes.fake_twilio import FakeTwilio, inbound_params, post_signed
from tests.ports import free_port

PUBLIC = "https://valet.example.com"
FROM = "+15005550006"
SAM = "+12125550123"
ANA = "+12125550101"
SAM_CHAT = 42
SIGNED = "I'm late - from Sam, via Valet"  # as the SMS carries it (GSM-7)
UNSURE = ("Ana Lopez may not have received your message “I'm late — from Sam, via Valet”: "
          "sending it was cut off. Ask Ana Lopez before I send it again.")
UNSURE_SMS = ('Ana Lopez may not have received your message "I\'m late - from Sam, via Valet": '
              "sending it was cut off. Ask Ana Lopez before I send it again.")  # GSM-7


def settings(tmp_path: Path, twilio: FakeTwilio, fake_llm: FakeOpenAI,
             tg: FakeTelegram | None = None) -> dict[str, str]:
    extra = {"VALET_TELEGRAM_TOKEN": TOKEN, "VALET_TELEGRAM_API_URL": tg.api_url} if tg else {}
    env = clean_env(tmp_path, VALET_LLM_BASE_URL=fake_llm.base_url, VALET_LLM_MODEL="m",
                    VALET_PUBLIC_URL=PUBLIC, VALET_SMS_FROM_NUMBER=FROM,
                    VALET_TWILIO_ACCOUNT_SID=twilio.account_sid,
                    VALET_TWILIO_AUTH_TOKEN=twilio.auth_token,
                    VALET_TWILIO_API_URL=twilio.base_url, **extra)
    (tmp_path / "valet.yaml").write_text(
        "memory:\n  enabled: false\n"
        "approvals:\n  sweep_seconds: 0.3\n"  # the restarted process looks again soon
        f"owner:\n  name: Sam\n  phone_numbers: ['{SAM}']\n  telegram_ids: ['{SAM_CHAT}']\n")
    return env


@asynccontextmanager
async def serving(env: dict[str, str]) -> AsyncIterator[tuple[asyncio.subprocess.Process, str]]:
    port = free_port()
    log = Path(env["VALET_CONFIG"]).with_name("serve.log")  # what it said, if it stops early
    with log.open("ab") as err:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot", "serve", env={**env, "VALET_HTTP_PORT": str(port)},
            cwd=ROOT, stdout=asyncio.subprocess.DEVNULL, stderr=err)
    try:
        try:
            await _until_up(f"http://127.0.0.1:{port}/readyz", proc)
        except AssertionError as err:
            raise AssertionError(f"{err}:\n{log.read_text(errors='replace')[-3000:]}") from None
        yield proc, f"http://127.0.0.1:{port}/sms/inbound"
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), 30)
            except TimeoutError:
                proc.kill()
                await proc.wait()


async def sam_texts(http: aiohttp.ClientSession, url: str, twilio: FakeTwilio, body: str,
                    sid: str) -> None:
    params = inbound_params(SAM, body, sid=sid, to=FROM, account_sid=twilio.account_sid)
    response = await post_signed(http, url, PUBLIC + "/sms/inbound", params, twilio.auth_token)
    assert response.status == 200


async def until(condition, what: str, timeout: float = 30.0) -> None:  # type: ignore[no-untyped-def]
    for _ in range(int(timeout / 0.05)):
        if condition():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"gave up waiting for {what}")


def tool_results(fake_llm: FakeOpenAI) -> list[str]:
    return [str(m["content"]) for m in fake_llm.requests[-1]["messages"] if m["role"] == "tool"]


async def killed(proc: asyncio.subprocess.Process) -> None:
    proc.send_signal(signal.SIGKILL)
    await proc.wait()


async def listed(env: dict[str, str]) -> str:
    code, out, err = await run_valet(["approvals", "list"], env)
    assert code == 0, err
    return out


SAVE_ANA = ToolCall("save_contact", {"name": "Ana Lopez", "phone": ANA})
TEXT_ANA = ToolCall("message_someone", {"to": "Ana", "text": "I'm late"})


async def test_a_kill_while_the_sms_to_ana_is_in_flight_is_told_as_unknown_by_sms(
        fake_llm, tmp_path):
    async with FakeTwilio() as twilio, aiohttp.ClientSession() as http:
        env = settings(tmp_path, twilio, fake_llm)
        async with serving(env) as (first, url):
            fake_llm.script(Reply(tool_calls=[SAVE_ANA]), Reply(content="Saved Ana."),
                            Reply(tool_calls=[TEXT_ANA]))
            await sam_texts(http, url, twilio, "Ana Lopez is +12125550101", "SM1")
            # Its answer first: sent while the first turn runs, the second would join it.
            await until(lambda: twilio.bodies_to(SAM) == ["Saved Ana."], "the first answer")
            await sam_texts(http, url, twilio, "text Ana that I'm late", "SM2")
            await until(lambda: len(twilio.bodies_to(SAM)) == 2, "the card")
            assert "Reply 1 to send" in twilio.bodies_to(SAM)[1]
            twilio.holding.add(ANA)
            fake_llm.script(Reply(content="On its way to Ana."))
            await sam_texts(http, url, twilio, "1", "SM3")
            # The approved turn is over (its answer sent) and the SMS to Ana is still held:
            # the kill cuts off that send alone. (Killed before the turn's last model call,
            # the turn is redone after the restart and takes the answer scripted for Sam's
            # next question: the order a loaded machine showed.)
            await until(lambda: twilio.held == 1 and "On its way to Ana." in twilio.bodies_to(
                SAM), "the SMS to Ana in flight, the turn's answer sent")
            await killed(first)  # kill -9 while the SMS to Ana is being sent
        twilio.holding.clear()

        fake_llm.script(Reply(content="I can't tell if Ana got it; ask her first."))
        async with serving(env) as (_, url):
            await until(lambda: any(UNSURE_SMS in b for b in twilio.bodies_to(SAM)),
                        "the notice")
            [notice] = [b for b in twilio.bodies_to(SAM) if UNSURE_SMS in b]
            # Told once, with the same message offered again (a new approval, by SMS "1").
            assert "Send Ana Lopez an SMS" in notice and "Reply 1 to send" in notice
            assert not any(b.startswith("Done") for b in twilio.bodies_to(SAM))
            await sam_texts(http, url, twilio, "did Ana get it?", "SM4")
            await until(lambda: any(b.startswith("I can't tell if Ana got it; ask her first.")
                                    for b in twilio.bodies_to(SAM)), "the answer")
            # A question about what waits is answered, and the offer is named again (the
            # approvals' reply rules: a question never approves, the person is reminded).
            assert twilio.bodies_to(SAM)[-1].endswith(
                "Still waiting for your OK: Send Ana Lopez an SMS from Valet's number to "
                '+12125550101: "I\'m late - from Sam, via Valet". Reply YES or NO.')
            # The model reads the same as Sam: the call's corrected result.
            assert any(r.startswith("Outcome unknown:") for r in tool_results(fake_llm))
            await asyncio.sleep(1)  # several more sweeps: still told once
            assert sum(UNSURE_SMS in b for b in twilio.bodies_to(SAM)) == 1
        assert twilio.bodies_to(ANA) == []  # never sent on its own, never sent twice
        table = await listed(env)
        assert "outcome unknown" in table and "pending" in table  # and the offer, waiting
        assert "executed" not in table


async def test_a_kill_while_the_sms_to_ana_is_in_flight_is_told_as_unknown_on_telegram(
        fake_llm, tmp_path):
    async with FakeTwilio() as twilio, FakeTelegram() as tg:
        env = settings(tmp_path, twilio, fake_llm, tg)
        async with serving(env) as (first, _):
            fake_llm.script(Reply(tool_calls=[SAVE_ANA]), Reply(content="Saved Ana."),
                            Reply(tool_calls=[TEXT_ANA]))
            tg.user_says(SAM_CHAT, "Ana Lopez is +12125550101")
            await tg.wait_for(lambda: "Saved Ana." in tg.texts(SAM_CHAT), timeout=30)
            tg.user_says(SAM_CHAT, "text Ana that I'm late")
            await tg.wait_for(lambda: any(m.buttons for m in tg.sent(SAM_CHAT)), timeout=30)
            [card] = [m for m in tg.sent(SAM_CHAT) if m.buttons]
            approve = next(b["callback_data"] for b in card.buttons if "Approve" in b["text"])
            twilio.holding.add(ANA)
            fake_llm.script(Reply(content="On its way to Ana."))
            tg.user_presses(SAM_CHAT, card.message_id, approve)
            # As by SMS: the turn's answer sent, the SMS to Ana still held.
            await until(lambda: twilio.held == 1 and "On its way to Ana." in tg.texts(SAM_CHAT),
                        "the SMS to Ana in flight, the turn's answer sent")
            await killed(first)
        twilio.holding.clear()

        async with serving(env):
            # The card says what became of it, and Sam gets the same message offered again.
            await tg.wait_for(lambda: "Outcome unknown: Send Ana Lopez" in card.text,
                              timeout=30)
            assert not card.buttons and "Done" not in card.text
            await tg.wait_for(lambda: any(UNSURE in t for t in tg.texts(SAM_CHAT)), timeout=30)
            [offer] = [m for m in tg.sent(SAM_CHAT) if UNSURE in m.text]
            assert offer.buttons[0]["text"] == "✅ Approve"
            fake_llm.script(Reply(content="I can't tell if Ana got it; ask her first."))
            # Telegram dates a message in whole seconds: one in the offer's own second is not
            # known to come after it, and an offer made again answers only what came after it
            # (bot.approvals.retry.answerable). Sam writes once that second is over, as a
            # person reading the offer does; the answer then names the offer that waits.
            await until(lambda: time.time() >= int(offer.sent_at) + 1, "the offer's second over")
            tg.user_says(SAM_CHAT, "did Ana get it?")
            await tg.wait_for(lambda: any(t.startswith("I can't tell if Ana got it; ask her first.")
                                          for t in tg.texts(SAM_CHAT)), timeout=30)
            assert tg.texts(SAM_CHAT)[-1].endswith(
                "Still waiting for your OK: Send Ana Lopez an SMS from Valet's number to "
                "+12125550101: “I'm late — from Sam, via Valet”. Reply YES or NO.")
            assert any(r.startswith("Outcome unknown:") for r in tool_results(fake_llm))
        assert twilio.bodies_to(ANA) == []
        table = await listed(env)
        assert "outcome unknown" in table and "executed" not in table
