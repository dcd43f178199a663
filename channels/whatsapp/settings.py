"""WhatsApp's section of valet.yaml (`whatsapp:`), owned here: its keys, their defaults, the
environment variable that sets its sender; channels.registry hands it to the loader
(bot.config.channel_settings), which checks it with the rest of the file. Twilio's account
(VALET_TWILIO_ACCOUNT_SID, VALET_TWILIO_AUTH_TOKEN) is the shared Twilio package's
(channels/twilio)."""

from __future__ import annotations

import re

import pydantic

from bot.config.channel_settings import ChannelSection
from channels.twilio.senders import TwilioSender

# The kinds of proactive message a template may carry (window.py).
TEMPLATE_KINDS = ("reminder", "summary", "card", "notice")


class WhatsAppSettings(TwilioSender):
    """WhatsApp over Twilio (the same account as SMS: VALET_TWILIO_ACCOUNT_SID,
    VALET_TWILIO_AUTH_TOKEN); docs/whatsapp.md."""

    # Valet's WhatsApp sender, E.164 (the sandbox's +14155238886, or a registered sender);
    # a "whatsapp:" before it is read as the number (channels/whatsapp/wire.py).
    from_number: str | None = None
    messaging_service_sid: str | None = None  # or a Messaging Service with the sender in it
    # The sandbox's join words ("join shiny-cat"): what a person first sends to the sandbox
    # number (said by `valet onboard` and the owner's claim line); None: a registered sender.
    sandbox_join: str | None = None
    # Approval cards as quick-reply buttons (Twilio's Content API); false: answered in words.
    buttons: bool = True
    # Approved templates (content SIDs, HX...) for what Valet sends first outside the 24-hour
    # window, per kind: reminder, summary (a triggered run's result), card (an approval;
    # a quick-reply template), notice (anything else). A kind without one goes to the
    # person's other channel, with a line saying why.
    templates: dict[str, str] = {}
    max_request_bytes: int = pydantic.Field(64 * 1024, ge=1024)  # a webhook body, at most
    # What one message costs, in US dollars: Twilio's fee per WhatsApp message (session
    # messages carry no Meta fee); a template also carries Meta's fee, by country and
    # category: `price_per_template` is the whole of it, an estimate.
    price_per_message: float = pydantic.Field(0.005, ge=0)
    price_per_template: float = pydantic.Field(0.02, ge=0)
    # A number that is not let in gets at most one reply per this many hours, all such
    # numbers together at most `stranger_replies_per_hour`.
    stranger_reply_hours: float = pydantic.Field(24.0, gt=0)
    stranger_replies_per_hour: int = pydantic.Field(10, ge=0)

    @pydantic.field_validator("templates")
    @classmethod
    def _template_sids(cls, value: dict[str, str]) -> dict[str, str]:
        for kind, sid in value.items():
            if kind not in TEMPLATE_KINDS:
                raise ValueError(f"{kind}: not a kind of message (one of "
                                 f"{', '.join(TEMPLATE_KINDS)})")
            if not re.fullmatch(r"HX[0-9a-fA-F]{32}", sid):
                raise ValueError(f"{kind}: {sid!r} is not a content SID (HX and 32 hex "
                                 "digits, from the Twilio console's Content Template Builder)")
        return value


SECTION = ChannelSection("whatsapp", WhatsAppSettings,
                         env={"VALET_WHATSAPP_FROM_NUMBER": ("from_number",)})
