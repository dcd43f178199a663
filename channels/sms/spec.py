"""SMS, described once (channels/spec.py): Twilio, turned on by VALET_TWILIO_ACCOUNT_SID,
signed webhooks in, E.164 numbers, billed in segments (a long message cut, the rest on
MORE), strangers' replies limited, the owner's phone numbers. Its parts load when used
(twilio only with the channel)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING

from bot.config import Settings
from bot.db import Database
from bot.plumbing.metrics import Reading
from channels.sms.traits import NAME, TRAITS
from channels.spec import Building, Built, ChannelSpec, Doctor, ServedChannel, Usage
from channels.twilio.senders import account_claimed_elsewhere

if TYPE_CHECKING:
    from bot.people.strangers import StrangerLimits
    from bot.setup.onboarding import Step
    from bot.setup.report import MenuSource, Report

ACCOUNT_ENV = "VALET_TWILIO_ACCOUNT_SID"


def _build(given: Building) -> Built:
    from channels.sms.channel import build_sms_channel

    channel = build_sms_channel(given.host, given.settings, given.env, emoji=given.emoji)
    return Built(channel, channel.sender)


def _configured(settings: Settings, env: Mapping[str, str]) -> bool:
    """The Twilio account turns SMS on, unless it is there for another channel alone (that
    channel's sender set and no SMS sender): the account is shared (channels.twilio)."""
    if not env.get(ACCOUNT_ENV):
        return False
    sms = settings.sms
    return bool(sms.from_number or sms.messaging_service_sid) \
        or not account_claimed_elsewhere(settings)


def _public_url_for(settings: Settings, env: Mapping[str, str]) -> str | None:
    return "SMS" if _configured(settings, env) else None


def _claim(served: ServedChannel, settings: Settings) -> str:
    number = settings.sms.from_number or "Valet's Twilio number"
    return f"text {{code}} to {number} from your phone"


def _strangers(settings: Settings) -> StrangerLimits:
    """Its replies cost money: a sender not let in gets few, and none abroad."""
    from bot.people.strangers import StrangerLimits
    from bot.text.phones import in_countries

    sms = settings.sms
    return StrangerLimits(per_sender=timedelta(hours=sms.stranger_reply_hours),
                          per_hour=sms.stranger_replies_per_hour,
                          reachable=in_countries(settings.sms_countries()))


async def _check(settings: Settings, env: Mapping[str, str], report: Report,
                 menu: MenuSource) -> None:
    if env.get(ACCOUNT_ENV) and not _configured(settings, env):
        report.off("SMS: the Twilio account serves another channel alone; set "
                   "sms.from_number (or sms.messaging_service_sid) to turn SMS on")
        return
    from channels.sms.doctor import check_sms

    await check_sms(settings, env, report)


def _costs(settings: Settings, report: Report) -> None:
    from channels.sms.doctor import check_costs

    check_costs(settings, report)


def _onboard() -> Step:
    from channels.sms.onboard import STEP

    return STEP


async def _readings(db: Database) -> list[Reading]:
    from channels.sms.store import SmsStore

    return [Reading("valet_sms_segments_sent", "SMS segments handed to Twilio, all time",
                    await SmsStore(db).segments_total())]


async def _daily(db: Database, start: datetime, end: datetime, zone: str
                 ) -> dict[tuple[str, date], int]:
    from channels.sms.store import SmsStore

    return await SmsStore(db).daily_segments(start, end, zone)


async def _since(db: Database, user_id: str, since: datetime) -> int:
    from channels.sms.store import SmsStore

    return await SmsStore(db).segments_since(user_id, since)


SPEC = ChannelSpec(
    traits=TRAITS,
    address="an E.164 phone number (+15551234567)",
    configured=_configured,
    turn_on=ACCOUNT_ENV,
    build=_build,
    owner_key="phone_numbers",
    public_url_for=_public_url_for,
    claim=_claim,
    strangers=_strangers,
    doctor=Doctor(_check, costs=_costs),
    onboard=_onboard,
    migrations="channels.sms",
    webhook_prefix=NAME,
    readings=_readings,
    # The default price (an estimate: sms.price_per_segment may price each country).
    usage=Usage("SMS segments", "segment", "sms.price_per_segment", _daily, _since,
                lambda settings: settings.sms_segment_price("")),
)
