"""SMS's step of `valet onboard`: the Twilio account (its credentials tried), Valet's number
or Messaging Service, the owner's own phone, and once the public address is known the
number's incoming webhook pointed at Valet."""

from __future__ import annotations

from bot.setup.ask import Question, SkipStep
from bot.setup.onboarding import Context, Parser, Step
from bot.text.phones import PhoneNumberError, normalize
from channels.twilio.checks import NumberState, TwilioCheck, TwilioUnusable
from channels.twilio.onboard import ask_account

OWNER_KEY = "phone_numbers"
ACCOUNT_ENV = "VALET_TWILIO_ACCOUNT_SID"


def flags(p: Parser) -> None:
    p.add_argument("--no-sms", action="store_true", help="leave SMS out")
    p.add_argument("--sms-from", help="Valet's Twilio number (E.164) or Messaging Service SID")
    p.add_argument("--owner-phone", help="the owner's own mobile number")


def current(c: Context) -> str | None:
    sid = c.env.get(ACCOUNT_ENV)
    sender = c.settings.sms.from_number or c.settings.sms.messaging_service_sid
    if not (sid and c.env.get("VALET_TWILIO_AUTH_TOKEN") and sender):
        return None
    return f"the Twilio account {sid[:8]}..., sending from {sender}"


def public_url_for(c: Context) -> str | None:
    """Twilio posts each message to Valet: SMS needs one whenever it is on."""
    return "SMS" if c.draft.env.get(ACCOUNT_ENV) or c.env.get(ACCOUNT_ENV) else None


async def sms_step(c: Context) -> None:
    """The Twilio account, Valet's number (or Messaging Service) and the owner's phone; the
    number's webhook pointed at Valet once the public URL is known (`draft.at_public_url`)."""
    if c.args.no_sms:
        c.q.say("   skipped")
        return
    found = await ask_account(c, "SMS")
    if found is None:
        return
    sid, token = found
    api_url = c.env.get("VALET_TWILIO_API_URL") or None
    number = await _sender(c, TwilioCheck(sid, token, api_url))
    region = c.settings.sms.default_region
    owner = await c.q.answer(Question(
        "Your own mobile number, with its country code (you are the owner by SMS; Enter to "
        "skip)", "--owner-phone",
        default=(c.settings.owner.phone_numbers or [""])[0], given=c.args.owner_phone,
        required=False), lambda p: _phone_problem(p, region))
    if owner:
        c.draft.add_owner(OWNER_KEY, normalize(owner, region))
    if number is not None:  # its webhook, once the public address is known
        c.draft.at_public_url.append(lambda url: _point_at(c, number, url))


async def _sender(c: Context, twilio: TwilioCheck) -> NumberState | None:
    found: NumberState | None = None
    service = ""

    async def usable(sender: str) -> str | None:
        nonlocal found, service
        try:
            if sender.startswith("MG"):
                service = await twilio.messaging_service(sender)
                return None
            number = normalize(sender, c.settings.sms.default_region)
            state = await twilio.number(number)
        except (TwilioUnusable, PhoneNumberError) as err:
            return str(err)
        if not state.sms:
            return f"{number} cannot send SMS: choose an SMS-capable number"
        found = state
        return None

    leave = "; Enter leaves SMS out" if c.q.interactive else ""
    try:
        sender = await c.q.answer(Question(
            "Valet's Twilio number (E.164, e.g. +15551234567) or Messaging Service SID (MG..."
            f"{leave})", "--sms-from",
            default=c.settings.sms.from_number or c.settings.sms.messaging_service_sid,
            given=c.args.sms_from, required=not c.q.interactive), usable)
    finally:
        await twilio.close()
    if not sender:  # a number not on the account, a service Twilio does not know: not stuck
        raise SkipStep()
    if found is not None:
        c.q.say(f"   ok: {found.number} sends SMS")
        c.draft.config[("sms", "from_number")] = found.number
        c.draft.config[("sms", "messaging_service_sid")] = None
    else:
        c.q.say(f"   ok: the Messaging Service {service!r}")
        c.draft.config[("sms", "messaging_service_sid")] = sender
        c.draft.config[("sms", "from_number")] = None
    return found


def _phone_problem(raw: str, region: str | None) -> str | None:
    try:
        normalize(raw, region)
    except PhoneNumberError as err:
        return str(err)
    return None


async def _point_at(c: Context, number: NumberState, url: str) -> None:
    """The number's incoming SMS at Valet's webhook, if it is not already: asked, then done
    through Twilio, else left as a next step to do by hand."""
    inbound = url.rstrip("/") + "/sms/inbound"
    if number.sms_url == inbound:
        return
    asked = f"   Point {number.number}'s incoming SMS at {inbound}?"
    if not (await c.q.confirm(asked, True) and await _point_webhook(c, number, inbound)):
        c.draft.next_steps.append(f"In the Twilio console, set {number.number}'s 'A message "
                                  f"comes in' to Webhook, HTTP POST, {inbound}")


async def _point_webhook(c: Context, number: NumberState, inbound: str) -> bool:
    """True when Twilio took it; otherwise the reason is said (the rest stands: this one is
    then done by hand)."""
    twilio = TwilioCheck(c.draft.env["VALET_TWILIO_ACCOUNT_SID"] or "",
                         c.draft.env["VALET_TWILIO_AUTH_TOKEN"] or "",
                         c.env.get("VALET_TWILIO_API_URL") or None)
    try:
        await twilio.point_sms_webhook(number, inbound)
    except TwilioUnusable as err:
        c.q.say(f"   {err}")
        return False
    finally:
        await twilio.close()
    c.q.say(f"   ok: Twilio posts {number.number}'s messages to {inbound}")
    return True


STEP = Step("SMS (Twilio: Account SID and Auth Token from the console's Account info)",
            sms_step, current, flags=flags, public_url_for=public_url_for)
