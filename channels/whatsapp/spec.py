"""WhatsApp, described once (channels/spec.py): Twilio's account (VALET_TWILIO_ACCOUNT_SID)
and a WhatsApp sender (whatsapp.from_number) turn it on; signed webhooks in, E.164 numbers,
priced per message, strangers' replies limited, the owner's phone numbers. Its parts load
when used (twilio only with the channel)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING

from bot.config import Settings
from bot.db import Database
from bot.plumbing.metrics import Reading
from channels.spec import Building, Built, ChannelSpec, Doctor, ServedChannel, Usage
from channels.whatsapp.lines import WhatsAppLines
from channels.whatsapp.settings import SECTION
from channels.whatsapp.traits import NAME, TRAITS

if TYPE_CHECKING:
    from bot.people.strangers import StrangerLimits
    from bot.setup.onboarding import Step
    from bot.setup.report import MenuSource, Report

ACCOUNT_ENV = "VALET_TWILIO_ACCOUNT_SID"


def _build(given: Building) -> Built:
    from channels.whatsapp.channel import build_whatsapp_channel

    channel = build_whatsapp_channel(given.host, given.settings, given.env)
    return Built(channel, channel.sender)


def _configured(settings: Settings, env: Mapping[str, str]) -> bool:
    wa = SECTION.of(settings)
    return bool(env.get(ACCOUNT_ENV) and (wa.from_number or wa.messaging_service_sid))


def _public_url_for(settings: Settings, env: Mapping[str, str]) -> str | None:
    return "WhatsApp" if _configured(settings, env) else None


def _claim(served: ServedChannel, settings: Settings) -> str:
    wa = SECTION.of(settings)
    number = wa.from_number or "Valet's WhatsApp number"
    joined = f" (first send '{wa.sandbox_join}')" if wa.sandbox_join else ""
    return f"send {{code}} on WhatsApp to {number}{joined}"


def _strangers(settings: Settings) -> StrangerLimits:
    """Its replies cost money: a sender not let in gets few."""
    from bot.people.strangers import StrangerLimits

    wa = SECTION.of(settings)
    return StrangerLimits(per_sender=timedelta(hours=wa.stranger_reply_hours),
                          per_hour=wa.stranger_replies_per_hour)


async def _check(settings: Settings, env: Mapping[str, str], report: Report,
                 menu: MenuSource) -> None:
    from channels.whatsapp.doctor import check_whatsapp

    await check_whatsapp(settings, env, report)


def _costs(settings: Settings, report: Report) -> None:
    from channels.whatsapp.doctor import check_costs

    check_costs(settings, report)


def _onboard() -> Step:
    from channels.whatsapp.onboard import STEP

    return STEP


async def _readings(db: Database) -> list[Reading]:
    from channels.whatsapp.store import WhatsAppStore

    return [Reading("valet_whatsapp_messages_sent", "WhatsApp messages handed to Twilio, "
                    "all time", await WhatsAppStore(db).messages_total())]


async def _daily(db: Database, start: datetime, end: datetime, zone: str
                 ) -> dict[tuple[str, date], int]:
    from channels.whatsapp.store import WhatsAppStore

    return await WhatsAppStore(db).daily_messages(start, end, zone)


async def _since(db: Database, user_id: str, since: datetime) -> int:
    from channels.whatsapp.store import WhatsAppStore

    return await WhatsAppStore(db).messages_since(user_id, since)


SPEC = ChannelSpec(
    traits=TRAITS,
    address="an E.164 phone number (+15551234567)",  # whatsapp:+15551234567 on the wire
    configured=_configured,
    turn_on=f"{ACCOUNT_ENV} and whatsapp.from_number",
    build=_build,
    section=SECTION,
    owner_key="phone_numbers",
    public_url_for=_public_url_for,
    claim=_claim,
    strangers=_strangers,
    doctor=Doctor(_check, costs=_costs),
    onboard=_onboard,
    migrations="channels.whatsapp",
    webhook_prefix=NAME,
    readings=_readings,
    usage=Usage("WhatsApp messages", "message", "whatsapp.price_per_message", _daily, _since,
                lambda settings: SECTION.of(settings).price_per_message),
    lines=WhatsAppLines,
)
