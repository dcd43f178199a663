"""What `valet doctor` says of what Valet may cost: where SMS may go (`sms.allowed_countries`,
or the countries of Valet's number and the owner's numbers), the limits on strangers and
segments, and the daily allowance with the models it has no price for."""

from __future__ import annotations

from collections.abc import Mapping

from bot.cli.doctor_setup import Report
from bot.config import Settings


def check_costs(settings: Settings, env: Mapping[str, str], report: Report) -> None:
    if env.get("VALET_TWILIO_ACCOUNT_SID"):
        _sms(settings, report)
    _allowance(settings, report)


def _sms(settings: Settings, report: Report) -> None:
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


def _allowance(settings: Settings, report: Report) -> None:
    budget = settings.budget
    if budget.daily_usd <= 0 and budget.owner_daily_usd is None:
        report.off("daily allowance: budget.daily_usd is 0 (nobody is limited)")
        return
    limits = [f"${budget.daily_usd:.2f} a day for everyone but the owner"
              if budget.daily_usd > 0 else "no allowance for people",
              f"${budget.owner_daily_usd:.2f} for the owner" if budget.owner_daily_usd
              else "none for the owner"]
    report.ok("daily allowance: " + ", ".join(limits))
    models = [m for m in [settings.llm.model, *(f.model for f in settings.llm.fallback_models)]
              if m]
    unpriced = [m for m in models if m not in settings.llm.prices]
    if unpriced:
        report.note(f"llm.prices has no price for {', '.join(unpriced)}: its tokens count as "
                    "$0 against the allowance")
