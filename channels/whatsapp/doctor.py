"""`valet doctor`'s look at WhatsApp: the Twilio account (shared with SMS,
channels.twilio.doctor), the sender (the sandbox, or a number of the account), the webhook
address Twilio must post to, the content templates of `whatsapp.templates` (there, and
approved by WhatsApp); and what it may cost."""

from __future__ import annotations

from collections.abc import Mapping

from bot.config import Settings
from bot.setup.report import Report
from channels.twilio.checks import NotKnown, TwilioCheck, TwilioUnusable
from channels.twilio.doctor import account_check
from channels.whatsapp.settings import SECTION
from channels.whatsapp.webhook import INBOUND_PATH, STATUS_PATH
from channels.whatsapp.wire import from_wire

SANDBOX_NUMBER = "+14155238886"  # Twilio's WhatsApp sandbox, the same for every account


async def check_whatsapp(settings: Settings, env: Mapping[str, str], report: Report) -> None:
    wa = SECTION.of(settings)
    if not (wa.from_number or wa.messaging_service_sid):
        report.off("WhatsApp: set whatsapp.from_number (the sandbox's +14155238886, or your "
                   "WhatsApp sender) to turn it on (valet onboard)")
        return
    twilio = await account_check(env, report, "WhatsApp")
    if twilio is None:
        return
    try:
        await report.guarded("WhatsApp sender", lambda: _sender_check(settings, twilio, report))
        for kind, sid in sorted(wa.templates.items()):
            await report.guarded(f"WhatsApp template {kind}",
                                 lambda kind=kind, sid=sid: _template_check(  # type: ignore[misc]
                                     twilio, kind, sid, report))
    finally:
        await twilio.close()
    if settings.public_url:
        base = settings.public_url.rstrip("/")
        report.note(f"WhatsApp: Twilio must post to {base}{INBOUND_PATH} ('When a message "
                    f"comes in', HTTP POST; delivery reports go to {base}{STATUS_PATH} by "
                    "themselves)")


async def _sender_check(settings: Settings, twilio: TwilioCheck, report: Report) -> None:
    wa = SECTION.of(settings)
    number = from_wire(wa.from_number) if wa.from_number else None
    if not number:
        report.ok(f"WhatsApp sends through the Messaging Service {wa.messaging_service_sid}")
        return
    if number == SANDBOX_NUMBER:
        joined = f"'{wa.sandbox_join}'" if wa.sandbox_join else "its join words"
        report.note(f"WhatsApp: the Twilio sandbox ({number}): each person first sends "
                    f"{joined} to it, and joins again every 72 hours")
        return
    try:
        await twilio.number(number)
    except TwilioUnusable:
        report.note(f"WhatsApp: {number} is not a number of this Twilio account (a sender "
                    "registered with your own number): only sending shows it works")
        return
    report.ok(f"WhatsApp sender {number} is on the account")


async def content_approval(twilio: TwilioCheck, sid: str) -> tuple[str, str]:
    """A content template's friendly name and WhatsApp's word on it ("approved", "pending",
    "rejected"; "" when it was never submitted: Twilio's Content API has no approval then)."""
    what = f"the content template {sid}"
    found = await twilio.asked(what, lambda client: client.content.v1.contents(sid)
                               .fetch_async())
    try:
        approval = await twilio.asked(what, lambda client: client.content.v1.contents(sid)
                                      .approval_fetch().fetch_async())
    except NotKnown:
        return str(found.friendly_name or sid), ""
    whatsapp = approval.whatsapp if isinstance(approval.whatsapp, dict) else {}
    return str(found.friendly_name or sid), str(whatsapp.get("status") or "")


async def _template_check(twilio: TwilioCheck, kind: str, sid: str, report: Report) -> None:
    try:
        name, status = await content_approval(twilio, sid)
    except TwilioUnusable as err:
        report.bad(f"whatsapp.templates.{kind}: {err}")
        return
    if status == "approved":
        report.ok(f"WhatsApp template for {kind}: {name!r}, approved")
    else:
        said = "not submitted" if status in ("", "unsubmitted") else status
        report.bad(f"whatsapp.templates.{kind}: {name!r} is {said} for "
                   "WhatsApp, not approved: until it is, such messages outside the 24-hour "
                   "window fail (Twilio console, Content Template Builder)")


def check_costs(settings: Settings, report: Report) -> None:
    wa = SECTION.of(settings)
    kinds = ", ".join(sorted(wa.templates)) or "none"
    report.note(f"WhatsApp: ${wa.price_per_message:g} a message, ${wa.price_per_template:g} a "
                f"template (whatsapp.price_per_message, price_per_template); templates for "
                f"{kinds} (the rest goes on the person's other channel outside the 24-hour "
                "window)")
