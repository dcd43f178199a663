"""What `valet doctor` says of what Valet may cost: each channel's own (SMS: where it may go,
the limits on strangers and segments; channels/<name>/doctor.py), and the daily budget
with the models it has no price for."""

from __future__ import annotations

from collections.abc import Mapping

from bot.config import Settings
from bot.setup.report import Report
from channels.registry import specs


def check_costs(settings: Settings, env: Mapping[str, str], report: Report) -> None:
    for spec in specs(settings).configured(settings, env):
        if spec.doctor is not None and spec.doctor.costs is not None:
            spec.doctor.costs(settings, report)
    _budget(settings, report)


def _budget(settings: Settings, report: Report) -> None:
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
