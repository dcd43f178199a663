"""Two people on one `valet serve`, each in their own language: Ana texts in Spanish by SMS
(Valet proposes Spanish after her first message; she says "Sí"), the owner chose German on
Telegram (/language de). Each gets /help, a reminder, the morning summary, a card (what it
will do, and by SMS what "1" does), /tasks (times and every kind of schedule in their locale),
the command menu and the allowance notices in their own language: the notice about Ana that
the owner gets is in German, with German amounts. Real `valet serve` and `valet tasks`
processes; the real python-telegram-bot and Twilio clients against the fakes."""

from __future__ import annotations

import asyncio
import signal
import sys
from typing import Any

import aiohttp

from tests.e2e.test_console_pipe import ROOT, clean_env, run_valet
from tests.e2e.test_serve import _until_up
from tests.fakes.fake_openai import Reply, ToolCall
from tests.fakes.fake_telegram import TOKEN, FakeTelegram
from tests.fakes.fake_twilio import FakeTwilio, inbound_params, post_signed
from tests.helpers import until
from tests.ports import free_port

PUBLIC = "https://valet.example.com"
OWNER_CHAT = 4242
ANA = "+34612345678"
# Prompt tokens reported, at llm.prices below ($1 a million input tokens): the meter prices each
# call before it goes at its worst (the prompt as sent, a few thousand tokens: well under a
# cent), then counts what the server reported.
CHEAP = (10, 0)  # $0.00001
DEAR = (1_000_000, 0)  # $1: more than Ana's budget (budget.daily_usd 0.50)


def _system(body: dict[str, Any]) -> str:
    return str(body["messages"][0].get("content") or "")


def _last(body: dict[str, Any]) -> dict[str, Any]:
    return body["messages"][-1]


def model(body: dict[str, Any]) -> Reply:
    """The model: writes in the language the prompt names (Spanish, German), else English."""
    system, last = _system(body), _last(body)
    spanish, german = "chose Spanish" in system, "chose German" in system
    if last["role"] == "tool":
        return Reply(content="Hecho." if spanish else "Erledigt." if german else "Done.",
                     usage=CHEAP)
    said = str(last.get("content") or "")
    if "Good-morning summary" in said:
        return Reply(content="Buenos días: hoy no tienes nada pendiente." if spanish else
                     "Guten Morgen: heute steht nichts an." if german else "Good morning.",
                     usage=CHEAP)
    if "correo" in said or "Mail" in said:
        return Reply(tool_calls=[ToolCall("send_email", {"to": "team@corp.example",
                                                         "subject": "Q3"})], usage=CHEAP)
    if "cuesta" in said:
        return Reply(content="Vale.", usage=DEAR)
    return Reply(content="Claro." if spanish else "Klar." if german else "Sure.", usage=CHEAP)


async def test_each_person_reads_valet_in_their_own_language_and_locale(fake_llm, tmp_path):
    fake_llm.responder = model
    registry = tmp_path / "risky.yaml"
    registry.write_text("tools:\n  - module: tests.fakes.risky_tools\n    only: [send_email]\n"
                        "    approval: always\n")
    async with FakeTelegram() as tg, FakeTwilio() as twilio, aiohttp.ClientSession() as http:
        port = free_port()
        env = clean_env(tmp_path, VALET_LLM_BASE_URL=fake_llm.base_url, VALET_LLM_MODEL="m",
                        VALET_TELEGRAM_TOKEN=TOKEN, VALET_TELEGRAM_API_URL=tg.api_url,
                        VALET_AGENTS_FILES=str(registry), VALET_PUBLIC_URL=PUBLIC,
                        VALET_SMS_FROM_NUMBER="+15005550006",
                        VALET_TWILIO_ACCOUNT_SID=twilio.account_sid,
                        VALET_TWILIO_AUTH_TOKEN=twilio.auth_token,
                        VALET_TWILIO_API_URL=twilio.base_url, VALET_HTTP_PORT=str(port))
        (tmp_path / "valet.yaml").write_text(
            f"memory:\n  enabled: false\nowner:\n  telegram_ids: ['{OWNER_CHAT}']\n"
            f"access:\n  channels:\n    sms: {{policy: allowlist, allow: ['{ANA}']}}\n"
            "sms:\n  allowed_countries: [US, ES]\n  price_per_segment: 0\n"
            "budget:\n  daily_usd: 0.5\n"
            "llm:\n  prices:\n    m: {input: 1, output: 0}\n")
        serve = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot", "serve", env=env, cwd=ROOT,
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
        sms_url = f"http://127.0.0.1:{port}/sms/inbound"
        texts = 0

        async def ana_says(body: str) -> str:
            """Ana's SMS; what Valet texts back (its parts joined)."""
            nonlocal texts
            texts += 1
            before = len(twilio.bodies_to(ANA))
            params = inbound_params(ANA, body, sid=f"SM{texts}")
            async with await post_signed(http, sms_url, PUBLIC + "/sms/inbound", params,
                                         twilio.auth_token) as answer:
                assert answer.status == 200
            await until_more(lambda: len(twilio.bodies_to(ANA)), before)
            await asyncio.sleep(0.3)  # the other parts of a long answer
            return "\n".join(twilio.bodies_to(ANA)[before:])

        async def owner_says(text: str) -> list[Any]:
            before = len(tg.sent(OWNER_CHAT))
            tg.user_says(OWNER_CHAT, text)
            await until_more(lambda: len(tg.sent(OWNER_CHAT)), before)
            return tg.sent(OWNER_CHAT)[before:]

        async def run_now(user: str, *how: str) -> None:
            code, out, err = await run_valet(["tasks", "add", "--user", user, *how], env)
            assert code == 0, out + err
            task_id = out.split()[1].rstrip(":")
            code, out, err = await run_valet(["tasks", "run-now", task_id], env)
            assert code == 0, out + err

        try:
            await _until_up(f"http://127.0.0.1:{port}/readyz", serve)
            # The owner chooses German; Ana writes in Spanish and is offered Spanish, once.
            [said] = await owner_says("/language de")
            assert said.text == "Gut, ab jetzt schreibe ich dir auf Deutsch."
            first = await ana_says("Hola, ¿puedes recordarme mañana que llame a mi madre?")
            assert first.startswith("Sure.")  # no language chosen yet: nothing told to the model
            assert "¿Prefieres que te escriba en español? Responde SI." in first
            assert await ana_says("Sí") == "Perfecto, a partir de ahora te escribo en español."

            # /help, in each one's language.
            help_ana = await ana_says("/help")
            assert help_ana.startswith("Comandos:\n/help: lo que entiendo")
            assert "/language: el idioma en que te escribo" in help_ana
            [help_owner] = await owner_says("/help")
            assert help_owner.text.startswith("Befehle:\n/help: was ich verstehe")

            # The model is told the language to answer in, and answers in it.
            assert await ana_says("¿Y hoy?") == "Claro."
            assert "This user chose Spanish" in _system(fake_llm.requests[-1])

            # A reminder, and a time in each one's locale (/tasks).
            before = len(twilio.bodies_to(ANA))
            await run_now(f"sms:{ANA}", "--schedule", "every day at 9", "--remind",
                          "llamar a mamá")
            await until_more(lambda: len(twilio.bodies_to(ANA)), before)
            assert twilio.bodies_to(ANA)[-1] == "Recordatorio: llamar a mama"  # GSM-7, no ⏰
            before = len(tg.sent(OWNER_CHAT))
            await run_now("owner", "--schedule", "every day at 9", "--remind", "Zahnarzt")
            await until_more(lambda: len(tg.sent(OWNER_CHAT)), before)
            assert tg.texts(OWNER_CHAT)[-1] == "⏰ Erinnerung: Zahnarzt"
            for user in (f"sms:{ANA}", "owner"):
                code, out, err = await run_valet(["tasks", "add", "--user", user, "--schedule",
                                                  "tomorrow 15:00", "--remind", "x"], env)
                assert code == 0, out + err
            listing = await ana_says("/tasks")  # "—" folded to GSM-7, plain "í", "ó"
            assert "x - mañana a las 15:00" in listing
            assert "llamar a mama - todos los dias a las 9:00; la proxima, " in listing
            [tasks_owner] = await owner_says("/tasks")
            assert tasks_owner.text.startswith("Deine Aufgaben:")
            assert "— morgen um 15:00" in tasks_owner.text
            assert "Zahnarzt — jeden Tag um 9:00, als Nächstes " in tasks_owner.text
            # Every other kind of schedule too, in words in each one's language.
            for user, schedule in ((f"sms:{ANA}", "0 9 * * 1,4"),
                                   ("owner", "*/30 8-18 * * 1-5")):
                code, out, err = await run_valet(["tasks", "add", "--user", user, "--schedule",
                                                  schedule, "--remind", "y"], env)
                assert code == 0, out + err
            assert "y - los lunes y jueves a las 9:00; la proxima, " in await ana_says("/tasks")
            [tasks_owner] = await owner_says("/tasks")
            assert "y — alle 30 Minuten zwischen 8:00 und 18:59, werktags" in tasks_owner.text

            # The morning summary: the model is told each one's language.
            before = len(twilio.bodies_to(ANA))
            await run_now(f"sms:{ANA}", "--schedule", "every day at 7:30", "--morning-summary")
            await until_more(lambda: len(twilio.bodies_to(ANA)), before)
            assert twilio.bodies_to(ANA)[-1] == "Buenos dias: hoy no tienes nada pendiente."
            before = len(tg.sent(OWNER_CHAT))
            await run_now("owner", "--schedule", "every day at 7:30", "--morning-summary")
            await until_more(lambda: len(tg.sent(OWNER_CHAT)), before)
            assert tg.texts(OWNER_CHAT)[-1] == "Guten Morgen: heute steht nichts an."

            # Cards: the SMS one asks in Spanish; the Telegram one's buttons are German.
            card = await ana_says("manda el correo al equipo")
            assert card.startswith("Antes de seguir, necesito tu visto bueno:")
            # What the card says it will do, and what "1" does, in Spanish.
            assert "Ejecutar send email (to: team@corp.example, subject: Q3)? Responde 1 para " \
                   "ejecutar, 2 para cancelar" in card, card
            [card_owner] = [m for m in await owner_says("schick die Mail ans Team")
                            if m.buttons]
            assert card_owner.text.startswith("Bevor ich loslege, brauche ich dein OK:")
            assert [b["text"] for b in card_owner.buttons] == ["✅ Freigeben", "✏️ Ändern",
                                                              "✖️ Abbrechen"]
            assert "send email (to: team@corp.example, subject: Q3) ausführen" in \
                card_owner.text, card_owner.text
            # A press is answered at once, before any turn: in German too.
            before = len(tg.sent(OWNER_CHAT))
            tg.user_presses(OWNER_CHAT, card_owner.message_id,
                            card_owner.buttons[2]["callback_data"])
            await until(lambda: tg.called("answerCallbackQuery"), "the press answered")
            assert tg.called("answerCallbackQuery")[-1].params["text"] == "Wird abgebrochen..."
            await until_more(lambda: len(tg.sent(OWNER_CHAT)), before)
            # Telegram shows a German app the German command menu (setMyCommands
            # language_code), the owner's chat included.
            menu = {c["command"]: c["description"] for c in tg.language_commands["de", None]}
            assert menu["help"] == "was ich verstehe"
            assert {c["command"] for c in tg.language_commands["de", OWNER_CHAT]} >= {"pair"}

            # The budget: Ana spends $1 of her $0.50; her next message waits. She is told
            # in Spanish, the owner in German, with German amounts.
            await ana_says("¿cuánto cuesta?")
            before_owner = len(tg.sent(OWNER_CHAT))
            held = await ana_says("otra cosa")
            # Plain letters by SMS: "límite", "así" lose their accents; é, ñ are GSM-7.
            assert held == ("Has llegado al limite de hoy, asi que contestaré tus mensajes "
                            "mañana, o antes si mi dueño lo sube.")
            await until_more(lambda: len(tg.sent(OWNER_CHAT)), before_owner)
            notice = tg.texts(OWNER_CHAT)[-1]
            # German amounts (Babel: a decimal comma, the sign after a no-break space).
            assert f"{ANA} hat das Tageslimit erreicht (1,0" in notice, notice
            assert "\xa0$ von 0,50\xa0$): die Nachrichten warten bis morgen" in notice, notice
        finally:
            serve.send_signal(signal.SIGTERM)
            await asyncio.wait_for(serve.wait(), 60)


async def until_more(count: Any, before: int, timeout: float = 30.0) -> None:
    """Until `count()` is past `before` (generous: a real server, several processes)."""
    await until(lambda: count() > before, "another message", timeout=timeout)
