"""Telegram, described once (channels/spec.py): a bot turned on by VALET_TELEGRAM_TOKEN,
polling or a webhook, buttons and edits, the owner's Telegram ids. Its parts load when used
(python-telegram-bot only with the channel)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from bot.config import Settings
from channels.spec import Building, Built, ChannelSpec, Doctor, ServedChannel
from channels.telegram.traits import NAME, TRAITS

if TYPE_CHECKING:
    from bot.setup.onboarding import Step
    from bot.setup.report import MenuSource, Report


def _build(given: Building) -> Built:
    from channels.telegram.service import TelegramService

    service = TelegramService.build(given.host, given.settings)
    return Built(service, service.channel)


def _public_url_for(settings: Settings, env: Mapping[str, str]) -> str | None:
    on = settings.telegram.token and settings.telegram.mode == "webhook"
    return "the Telegram webhook" if on else None


def _claim(served: ServedChannel, settings: Settings) -> str:
    from channels.telegram.service import TelegramService  # what _build made of this spec

    bot = (served.username if isinstance(served, TelegramService) else "") or "your bot"
    return f"send \"/start {{code}}\" to @{bot} on Telegram"


async def _check(settings: Settings, env: Mapping[str, str], report: Report,
                 menu: MenuSource) -> None:
    from channels.telegram.doctor import check_telegram

    await check_telegram(settings, report, menu)


def _onboard() -> Step:
    from channels.telegram.onboard import STEP

    return STEP


SPEC = ChannelSpec(
    traits=TRAITS,
    address="a Telegram user or chat id (a group member: chat:user)",
    group_chat=lambda address: address.startswith("-"),  # a group's chat id is negative
    configured=lambda settings, env: bool(settings.telegram.token),
    turn_on="VALET_TELEGRAM_TOKEN",
    build=_build,
    owner_key="telegram_ids",
    public_url_for=_public_url_for,
    claim=_claim,
    doctor=Doctor(_check),
    onboard=_onboard,
    webhook_prefix=NAME,
    loggers=("channels.telegram",),
    quiet_loggers=("telegram",),  # python-telegram-bot's: its request URLs carry the token
)
