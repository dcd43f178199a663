"""`valet doctor`'s checks of the deployment's set-up: the data directory, the secrets Valet
generates (VALET_SECRET_KEY, the events token), the public URL, the owner, and each channel
as its service sees it (Telegram: the token, the webhook, the command menu; Twilio: the
credentials, the number or Messaging Service). With `--fix`, the safe repairs are made and
said: the data directory created, the webhook registered (or removed in polling mode), the
command menu set."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from telegram import Bot

from bot.channel import MenuCommand
from bot.config import Settings
from bot.credentials import KEY_ENV, parse_keys
from bot.db import Database
from bot.text.redact import redact_text
from channels.sms.checks import TwilioCheck, TwilioUnusable
from channels.telegram.checks import (
    TelegramUnusable,
    WebhookState,
    bot_username,
    make_bot,
    menu_set,
    register_webhook,
    remove_webhook,
    set_menu,
    webhook_state,
    webhook_url,
)
from channels.telegram.service import check_settings

Say = Callable[[str], None]
EVENTS_TOKEN_ENV = "VALET_EVENTS_TOKEN"
MIN_TOKEN_CHARS = 16  # a bearer token shorter than this can be guessed
RECENT_ERROR = timedelta(hours=24)  # an older webhook error is history, not a problem


@dataclass
class Report:
    """What doctor prints: one line per check, FAIL lines counted (exit 1 when any)."""

    say: Say
    fix: bool = False
    problems: int = 0
    fixed: list[str] = field(default_factory=list)

    def ok(self, text: str) -> None:
        self.say(f"  ok    {redact_text(text)}")

    def bad(self, text: str) -> None:
        self.problems += 1
        self.say(f"  FAIL  {redact_text(text)}")

    def off(self, text: str) -> None:
        self.say(f"  off   {redact_text(text)}")

    def on(self, text: str) -> None:
        self.say(f"  on    {redact_text(text)}")

    def note(self, text: str) -> None:
        self.say(f"  note  {redact_text(text)}")

    def did(self, text: str) -> None:
        self.fixed.append(text)
        self.say(f"  fixed {redact_text(text)}")


def check_data_directory(settings: Settings, report: Report) -> None:
    where = settings.data_dir()
    if where.is_dir():
        if os.access(where, os.W_OK | os.X_OK):
            report.ok(f"data directory {where}")
        else:
            report.bad(f"data directory {where} is not writable by this user: fix its owner "
                       "or set VALET_DATA_DIR")
        return
    if where.exists():
        report.bad(f"data directory {where} is a file, not a directory: move it or set "
                   "VALET_DATA_DIR")
        return
    if report.fix:
        try:
            where.mkdir(parents=True)
        except OSError as err:
            report.bad(f"data directory {where} cannot be created: {err.strerror}; set "
                       "VALET_DATA_DIR to a writable directory")
            return
        report.did(f"created the data directory {where}")
        return
    parent = next((p for p in where.parents if p.exists()), Path("/"))
    if os.access(parent, os.W_OK | os.X_OK):
        report.note(f"data directory {where} does not exist yet (created at first start; "
                    "--fix creates it now)")
    else:
        report.bad(f"data directory {where} cannot be created ({parent} is not writable): "
                   "set VALET_DATA_DIR to a writable directory")


async def check_secret_key(env: Mapping[str, str], db: Database | None,
                           report: Report) -> None:
    try:
        keys = parse_keys(env.get(KEY_ENV))
    except Exception as err:
        report.bad(str(err))
        return
    if keys is not None:
        report.ok(f"{KEY_ENV} set (stored credentials are encrypted with it)")
        return
    stored = 0
    if db is not None:
        stored = int(await db.fetchval("SELECT COUNT(*) FROM credentials") or 0)
    if stored:
        report.bad(f"{KEY_ENV} is not set but {stored} credential(s) are stored: set the key "
                   "they were stored with")
    else:
        report.off(f"{KEY_ENV} not set: calendars and mail cannot be connected (valet onboard "
                   "generates one; or `valet credentials new-key`)")


def check_events_token(env: Mapping[str, str], report: Report) -> None:
    token = env.get(EVENTS_TOKEN_ENV) or ""
    if not token:
        report.off(f"POST /events: set {EVENTS_TOKEN_ENV} to let other programs send events "
                   "(valet onboard generates one)")
    elif len(token) < MIN_TOKEN_CHARS:
        report.bad(f"{EVENTS_TOKEN_ENV} is {len(token)} characters: use at least "
                   f"{MIN_TOKEN_CHARS} random ones (openssl rand -hex 32)")
    else:
        report.ok(f"{EVENTS_TOKEN_ENV} set (POST /events)")


def check_public_url(settings: Settings, env: Mapping[str, str], report: Report) -> None:
    """A public https address is needed by SMS and by Telegram's webhook mode."""
    needs = []
    if env.get("VALET_TWILIO_ACCOUNT_SID"):
        needs.append("SMS")
    if settings.telegram.token and settings.telegram.mode == "webhook":
        needs.append("the Telegram webhook")
    url = settings.public_url
    if url:
        report.ok(f"public URL {url}")
    elif needs:
        report.bad(f"{' and '.join(needs)} need(s) a public https address: set "
                   "VALET_PUBLIC_URL (or public_url) to where this server is reached, e.g. "
                   "https://valet.example.com")


async def check_owner(settings: Settings, db: Database | None, report: Report) -> None:
    configured = settings.owner.telegram_ids + settings.owner.phone_numbers
    linked = 0
    if db is not None:
        linked = int(await db.fetchval(
            "SELECT COUNT(*) FROM identities i JOIN users u ON u.id = i.user_id"
            " WHERE u.is_owner = 1 AND i.channel <> 'console'") or 0)
    if configured or linked:
        report.ok(f"owner {settings.owner.name!r}: {len(configured) or linked} address(es)")
    else:
        report.note("no owner address yet: valet serve prints a one-time claim code (send it "
                    "to the bot to become the owner), or set owner.telegram_ids / "
                    "owner.phone_numbers")


# The command table's menu for Telegram (built only when --fix needs it).
MenuSource = Callable[[], Awaitable[Sequence[MenuCommand]]]


async def check_telegram(settings: Settings, report: Report, menu: MenuSource) -> None:
    tg = settings.telegram
    if not tg.token:
        report.off("Telegram: set VALET_TELEGRAM_TOKEN to turn it on (valet onboard)")
        return
    try:
        check_settings(tg)
    except Exception as err:
        report.bad(str(err))
        return
    bot = make_bot(tg.token, tg.api_url)
    try:
        name = await bot_username(bot)
        report.ok(f"Telegram bot @{name} ({tg.mode})")
        state = await webhook_state(bot)
        if tg.mode == "webhook":
            await _webhook(settings, bot, state, report)
        elif state.url:
            if report.fix:
                await remove_webhook(bot)
                report.did(f"removed the webhook {state.url}: polling receives the updates")
            else:
                report.bad(f"Telegram has a webhook set ({state.url}) but telegram.mode is "
                           "polling: polling receives nothing while it is; valet doctor --fix "
                           "removes it (or set telegram.mode: webhook)")
        if not await menu_set(bot):
            if report.fix:
                await set_menu(bot, await menu(), settings.owner.telegram_ids)
                report.did(f"set @{name}'s command menu")
            else:
                report.note(f"@{name} has no command menu yet (valet serve sets it at start; "
                            "--fix sets it now)")
    except TelegramUnusable as err:
        report.bad(str(err))
    finally:
        await bot.shutdown()


async def _webhook(settings: Settings, bot: Bot, state: WebhookState, report: Report) -> None:
    expected = webhook_url(settings.telegram.webhook_url or "")
    if state.url != expected:
        if report.fix:
            await register_webhook(bot, settings.telegram)
            report.did(f"registered the webhook {expected}")
            return
        now_set = state.url or "none"
        report.bad(f"Telegram's webhook is {now_set}, not {expected}: valet doctor --fix "
                   "registers it (valet serve does at start too)")
        return
    report.ok(f"Telegram webhook {expected} ({state.pending} update(s) waiting)")
    at = state.last_error_at
    if state.last_error and (at is None or datetime.now(UTC) - at < RECENT_ERROR):
        when = f" at {at:%Y-%m-%d %H:%M} UTC" if at else ""
        report.bad(f"Telegram could not deliver to the webhook{when}: {state.last_error}; "
                   "check that the public URL reaches valet serve over https (the proxy, "
                   "the certificate)")


async def check_sms(settings: Settings, env: Mapping[str, str], report: Report) -> None:
    sid = env.get("VALET_TWILIO_ACCOUNT_SID")
    if not sid:
        report.off("SMS: set VALET_TWILIO_ACCOUNT_SID and VALET_TWILIO_AUTH_TOKEN to turn it "
                   "on (valet onboard)")
        return
    token = env.get("VALET_TWILIO_AUTH_TOKEN")
    if not token:
        report.bad("SMS: VALET_TWILIO_AUTH_TOKEN is not set (Twilio console, Account info)")
        return
    twilio = TwilioCheck(sid, token, env.get("VALET_TWILIO_API_URL") or None)
    try:
        name = await twilio.account()
        report.ok(f"Twilio account {name!r}")
        number, service = settings.sms.from_number, settings.sms.messaging_service_sid
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
    finally:
        await twilio.close()
