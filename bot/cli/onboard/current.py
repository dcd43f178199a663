"""What is set up already, step by step, in a few words: what `valet onboard` offers to keep
when it runs again (after Ctrl-C, or to change one part). Read from the settings and the
environment (the env file included) as they were when it started; no service is asked."""

from __future__ import annotations

from bot.cli.onboard.steps import Context
from bot.config import OwnerSettings
from bot.text.redact import redact_url


def llm(c: Context) -> str | None:
    if not c.settings.llm.model:
        return None
    return f"{c.settings.llm.model} at {redact_url(c.settings.llm.base_url or 'OpenAI')}"


def telegram(c: Context) -> str | None:
    if not c.env.get("VALET_TELEGRAM_TOKEN"):
        return None
    owners = c.settings.owner.telegram_ids
    who = f", the owner's id {', '.join(owners)}" if owners else ""
    return f"a bot token ({c.settings.telegram.mode}{who})"


def sms(c: Context) -> str | None:
    sid = c.env.get("VALET_TWILIO_ACCOUNT_SID")
    sender = c.settings.sms.from_number or c.settings.sms.messaging_service_sid
    if not (sid and c.env.get("VALET_TWILIO_AUTH_TOKEN") and sender):
        return None
    return f"the Twilio account {sid[:8]}..., sending from {sender}"


def public_url(c: Context) -> str | None:
    return c.settings.public_url


def person(c: Context) -> str | None:
    name, zone = c.settings.owner.name, c.settings.timezone
    if name == OwnerSettings().name and zone == "UTC":
        return None
    return f"{name}, {zone}"
