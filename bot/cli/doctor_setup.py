"""`valet doctor`'s checks of the deployment's set-up: the data directory, the secrets Valet
generates (VALET_SECRET_KEY, the events token), the public URL, the owner, and each channel
as its service sees it (Telegram: the token, the webhook, the command menu; Twilio: the
credentials, the number or Messaging Service). With `--fix`, the safe repairs are made and
said: the data directory created, the webhook registered (or removed in polling mode), the
command menu set."""

from __future__ import annotations

import inspect
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from telegram import Bot
from telegram.error import TelegramError

from bot.channel import MenuCommand
from bot.config import Settings
from bot.credentials import KEY_ENV, parse_keys
from bot.db import Database
from bot.plumbing.logs import mask, secret_values
from bot.plumbing.private import private_dir
from bot.text.redact import redact_text
from channels.sms.checks import CredentialsRefused, TwilioCheck, TwilioUnusable
from channels.telegram.checks import (
    TelegramUnusable,
    TokenRefused,
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

log = logging.getLogger(__name__)

Say = Callable[[str], None]
EVENTS_TOKEN_ENV = "VALET_EVENTS_TOKEN"
MIN_TOKEN_CHARS = 16  # a bearer token shorter than this can be guessed
RECENT_ERROR = timedelta(hours=24)  # an older webhook error is history, not a problem


@dataclass
class Report:
    """What doctor prints: one line per check, FAIL lines counted (exit 1 when any). No line
    carries a secret: URL credentials and the values of the environment's secret variables
    are masked."""

    say: Say
    fix: bool = False
    problems: int = 0
    fixed: list[str] = field(default_factory=list)
    secrets: list[str] = field(default_factory=list)  # values masked in every line

    @classmethod
    def of(cls, say: Say, env: Mapping[str, str], *, fix: bool = False) -> Report:
        return cls(say, fix=fix, secrets=secret_values(env))

    def _line(self, tag: str, text: str) -> None:
        self.say(f"{tag}{mask(redact_text(text), self.secrets)}")

    def ok(self, text: str) -> None:
        self._line("  ok    ", text)

    def bad(self, text: str) -> None:
        self.problems += 1
        self._line("  FAIL  ", text)

    def off(self, text: str) -> None:
        self._line("  off   ", text)

    def on(self, text: str) -> None:
        self._line("  on    ", text)

    def note(self, text: str) -> None:
        self._line("  note  ", text)

    def did(self, text: str) -> None:
        self.fixed.append(text)
        self._line("  fixed ", text)

    async def guarded(self, name: str, check: Callable[[], object]) -> bool:
        """Run one check so that nothing it raises stops the others: an exception is a FAIL
        line naming the check and the error (counted like any problem). True when it ran to
        its end."""
        try:
            result = check()
            if inspect.isawaitable(result):
                await result
        except Exception as err:
            log.debug("doctor: the %s check failed", name, exc_info=True)
            self.bad(f"{name}: the check could not finish: {type(err).__name__}: "
                     f"{str(err)[:300] or 'no detail'}")
            return False
        return True


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
            private_dir(where)
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


@asynccontextmanager
async def _asking(method: str) -> AsyncIterator[None]:
    """Whatever Telegram answers to one Bot API call other than a result (a 502, a 404, a
    refusal) as TelegramUnusable naming the method; never the token."""
    try:
        yield
    except TelegramUnusable:
        raise
    except TelegramError as err:
        raise TelegramUnusable(f"Telegram refused {method}: {type(err).__name__}: "
                               f"{str(err.message)[:200]}") from None


async def check_telegram(settings: Settings, report: Report, menu: MenuSource) -> None:
    """The bot (getMe), its webhook (getWebhookInfo) and its command menu (getMyCommands),
    each reported on its own: one failing call does not hide what the others say. A refused
    token stops here (every call would be refused the same way)."""
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
    name = "the bot"
    try:
        try:
            name = "@" + await bot_username(bot)
            report.ok(f"Telegram bot {name} ({tg.mode})")
        except TokenRefused as err:
            report.bad(str(err))
            return
        except TelegramUnusable as err:
            report.bad(str(err))
        await _telegram_part(report, "Telegram webhook",
                             lambda: _webhook_check(settings, bot, report))
        await _telegram_part(report, "Telegram command menu",
                             lambda: _menu_check(settings, bot, name, report, menu))
    finally:
        await bot.shutdown()


async def _telegram_part(report: Report, name: str,
                         check: Callable[[], Awaitable[None]]) -> None:
    async def part() -> None:
        try:
            await check()
        except TelegramUnusable as err:
            report.bad(str(err))

    await report.guarded(name, part)


async def _webhook_check(settings: Settings, bot: Bot, report: Report) -> None:
    state = await webhook_state(bot)
    if settings.telegram.mode == "webhook":
        await _webhook(settings, bot, state, report)
    elif state.url:
        if report.fix:
            async with _asking("deleteWebhook"):
                await remove_webhook(bot)
            report.did(f"removed the webhook {state.url}: polling receives the updates")
        else:
            report.bad(f"Telegram has a webhook set ({state.url}) but telegram.mode is "
                       "polling: polling receives nothing while it is; valet doctor --fix "
                       "removes it (or set telegram.mode: webhook)")


async def _menu_check(settings: Settings, bot: Bot, name: str, report: Report,
                      menu: MenuSource) -> None:
    async with _asking("getMyCommands"):
        present = await menu_set(bot)
    if present:
        return
    if report.fix:
        commands = await menu()
        async with _asking("setMyCommands"):
            await set_menu(bot, commands, settings.owner.telegram_ids)
        report.did(f"set {name}'s command menu")
    else:
        report.note(f"{name} has no command menu yet (valet serve sets it at start; "
                    "--fix sets it now)")


async def _webhook(settings: Settings, bot: Bot, state: WebhookState, report: Report) -> None:
    expected = webhook_url(settings.telegram.webhook_url or "")
    if state.url != expected:
        if report.fix:
            async with _asking("setWebhook"):
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
    """The account (refused credentials stop here: every call would be refused), then the
    number or the Messaging Service, each reported on its own."""
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
        try:
            report.ok(f"Twilio account {await twilio.account()!r}")
        except CredentialsRefused as err:
            report.bad(str(err))
            return
        except TwilioUnusable as err:
            report.bad(str(err))
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
