"""`valet doctor`'s look at SMS: the Twilio account as Twilio sees it (refused credentials
stop there), then Valet's number or Messaging Service; and what SMS may cost (where it may
go, the limits on strangers and segments)."""

from __future__ import annotations

from collections.abc import Mapping

from bot.config import Settings
from bot.setup.report import Report
from channels.twilio.checks import TwilioCheck, TwilioUnusable
from channels.twilio.doctor import account_check


async def check_sms(settings: Settings, env: Mapping[str, str], report: Report) -> None:
    """The account (refused credentials stop here: every call would be refused), then the
    number or the Messaging Service, each reported on its own."""
    twilio = await account_check(env, report, "SMS")
    if twilio is None:
        return
    try:
        await report.guarded("Twilio sender", lambda: _sender_check(settings, twilio, report))
    finally:
        await twilio.close()


async def _sender_check(settings: Settings, twilio: TwilioCheck, report: Report) -> None:
    number, service = settings.sms.from_number, settings.sms.messaging_service_sid
    try:
        if number:
            found = await twilio.number(number)
            inbound = (settings.public_url or "").rstrip("/") + "/sms/inbound"
            if not found.sms:
                report.bad(f"{number} cannot send SMS: choose an SMS-capable number")
            elif settings.public_url and found.sms_url != inbound:
                report.bad(f"{number}'s incoming SMS webhook is {found.sms_url or 'not set'}, "
                           f"not {inbound}: set it in the Twilio console (the number, "
                           "Messaging, 'A message comes in': Webhook, HTTP POST)")
            else:
                report.ok(f"Twilio number {number} sends SMS")
        elif service:
            report.ok(f"Twilio Messaging Service {await twilio.messaging_service(service)!r}")
        else:
            report.bad("SMS needs sms.from_number or sms.messaging_service_sid "
                       "(VALET_SMS_FROM_NUMBER / VALET_SMS_MESSAGING_SERVICE_SID)")
    except TwilioUnusable as err:
        report.bad(str(err))


def check_costs(settings: Settings, report: Report) -> None:
    """Where SMS may go (`sms.allowed_countries`, or the countries of Valet's number and the
    owner's numbers), the limits on strangers and segments."""
    sms = settings.sms
    countries = settings.sms_countries()
    whence = "sms.allowed_countries" if sms.allowed_countries is not None else \
        "those of sms.from_number and owner.phone_numbers; sms.allowed_countries widens it"
    if not countries:
        report.bad("SMS may go to no country: set sms.allowed_countries (e.g. [US]) or the "
                   "owner's phone numbers; until then every SMS is refused")
    else:
        report.ok(f"SMS may go to {', '.join(countries)} only ({whence})")
    report.note(f"SMS: a number not let in gets at most one reply per "
                f"{sms.stranger_reply_hours:g} h, all of them {sms.stranger_replies_per_hour} "
                f"an hour; a message at most {sms.max_segments} segments (MORE for the rest)")
