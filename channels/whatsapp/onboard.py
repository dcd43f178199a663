"""WhatsApp's step of `valet onboard`: the Twilio account (the SMS step's, or asked here and
tried: channels.twilio.onboard), then the WhatsApp sender: Twilio's sandbox (+14155238886,
with its join words) or a registered sender; Enter skips it, as for SMS. Its webhook address
is a next step (a WhatsApp sender's webhook is set in the Twilio console)."""

from __future__ import annotations

from bot.setup.ask import Question
from bot.setup.onboarding import Context, Parser, Step
from bot.text.phones import PhoneNumberError, normalize
from channels.twilio.checks import TwilioCheck, TwilioUnusable
from channels.twilio.onboard import ask_account
from channels.twilio.rest import ACCOUNT_ENV, API_URL_ENV, TOKEN_ENV
from channels.whatsapp.doctor import SANDBOX_NUMBER
from channels.whatsapp.settings import SECTION
from channels.whatsapp.webhook import INBOUND_PATH


def flags(p: Parser) -> None:
    p.add_argument("--no-whatsapp", action="store_true", help="leave WhatsApp out")
    p.add_argument("--whatsapp-from", help="Valet's WhatsApp sender (E.164; the sandbox's "
                   f"{SANDBOX_NUMBER})")
    p.add_argument("--whatsapp-join", help="the sandbox's join words ('join shiny-cat')")


def current(c: Context) -> str | None:
    wa = SECTION.of(c.settings)
    sender = wa.from_number or wa.messaging_service_sid
    if not (c.env.get(ACCOUNT_ENV) and c.env.get(TOKEN_ENV) and sender):
        return None
    return f"sending from {sender}"


def public_url_for(c: Context) -> str | None:
    """Twilio posts each message to Valet: WhatsApp needs one whenever it is on."""
    return "WhatsApp" if c.draft.config.get(("whatsapp", "from_number")) \
        or SECTION.of(c.settings).from_number else None


async def whatsapp_step(c: Context) -> None:
    if c.args.no_whatsapp:
        c.q.say("   skipped")
        return
    known = c.draft.env.get(ACCOUNT_ENV) or c.env.get(ACCOUNT_ENV)
    if not known and not c.args.whatsapp_from:
        c.q.say("   skipped: WhatsApp goes through a Twilio account (the SMS step's, or "
                "give --whatsapp-from to set one up here)")
        return
    if not c.draft.env.get(ACCOUNT_ENV) and c.env.get(ACCOUNT_ENV) and c.env.get(TOKEN_ENV):
        c.draft.env.update({ACCOUNT_ENV: c.env[ACCOUNT_ENV], TOKEN_ENV: c.env[TOKEN_ENV]})
    found = await ask_account(c, "WhatsApp")  # the SMS step's, or asked now
    if found is None:
        return
    sid, token = found
    region = c.settings.sms.default_region

    def number_problem(raw: str) -> str | None:
        try:
            normalize(raw.removeprefix("whatsapp:"), region)
        except PhoneNumberError as err:
            return str(err)
        return None

    sender = await c.q.answer(Question(
        f"Valet's WhatsApp sender (E.164; Twilio's sandbox is {SANDBOX_NUMBER}; Enter to skip "
        "WhatsApp)", "--whatsapp-from", default=SECTION.of(c.settings).from_number or "",
        given=c.args.whatsapp_from, required=False), number_problem)
    if not sender:
        c.q.say("   skipped: no WhatsApp")
        return
    number = normalize(sender.removeprefix("whatsapp:"), region)
    if number == SANDBOX_NUMBER:
        join = await c.q.answer(Question(
            "The sandbox's join words (Twilio console, Messaging > Try it out > WhatsApp: "
            "'join <two words>')", "--whatsapp-join",
            default=SECTION.of(c.settings).sandbox_join or "", given=c.args.whatsapp_join,
            required=False), lambda s: None if not s or s.lower().startswith("join ")
            else "the join words start with 'join'")
        c.draft.config[("whatsapp", "sandbox_join")] = join or None
        c.q.say(f"   ok: the sandbox; each person first sends '{join or 'join ...'}' to "
                f"{number} on WhatsApp")
    else:
        await _on_account(c, sid, token, number)
    c.draft.config[("whatsapp", "from_number")] = number
    c.draft.at_public_url.append(lambda url: _webhook_step(c, number, url))


async def _on_account(c: Context, sid: str, token: str, number: str) -> None:
    twilio = TwilioCheck(sid, token, c.env.get(API_URL_ENV) or None)
    try:
        await twilio.number(number)
        c.q.say(f"   ok: {number} is on the account")
    except TwilioUnusable:
        c.q.say(f"   {number} is not a number of this account: a sender registered with "
                "your own number works too (valet doctor cannot check it)")
    finally:
        await twilio.close()


async def _webhook_step(c: Context, number: str, url: str) -> None:
    inbound = url.rstrip("/") + INBOUND_PATH
    c.draft.next_steps.append(f"In the Twilio console, set WhatsApp sender {number}'s 'When a "
                              f"message comes in' to {inbound} (HTTP POST)")


STEP = Step("WhatsApp (Twilio: the sandbox or a registered WhatsApp sender)", whatsapp_step,
            current, flags=flags, public_url_for=public_url_for)
