"""The wizard's steps, each asking and checking against the real service before going on:
the LLM endpoint (lists the models, tries one request), Telegram (getMe; the owner found by
their /start), Twilio (the credentials, the number or Messaging Service, the owner's phone),
the public URL, the timezone and the owner's name."""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import openai

from bot.cli.onboard.ask import OnboardStop, Question, Questions, SkipStep
from bot.cli.onboard.draft import Draft
from bot.cli.onboard.endpoint_step import describe_endpoint
from bot.config import OwnerSettings, Settings
from bot.config.sections import plain_http_problem
from bot.llm.openai_client import OpenAILLM
from bot.llm.port import LLMAuthError, LLMError, LLMModelNotFoundError, LLMTimeoutError
from bot.text.phones import PhoneNumberError, normalize
from bot.text.redact import redact_url
from channels.sms.checks import NumberState, TwilioCheck, TwilioUnusable
from channels.telegram.checks import TelegramUnusable, bot_username, make_bot, wait_for_start

OPENAI_URL = "https://api.openai.com/v1"
MODELS_SHOWN = 8
INTERACTIVE_WAIT_SECONDS = 120  # for the owner's /start; a script waits only when told


@dataclass
class Context:
    """What every step reads: the answers given as flags, the settings as they are (the
    defaults when run again), the environment (secrets, and the test fakes' URLs)."""

    q: Questions
    args: argparse.Namespace
    settings: Settings
    env: Mapping[str, str]
    draft: Draft = field(default_factory=Draft)


# --- the LLM --------------------------------------------------------------------------------


@dataclass
class _Probe:
    models: list[str]
    problem: str | None = None  # the endpoint cannot be used as given
    refused_key: bool = False


async def _probe(base_url: str, key: str) -> _Probe:
    llm = OpenAILLM(base_url=None if base_url == OPENAI_URL else base_url,
                    api_key=key or "not-needed", model="", timeout=20.0)
    where = redact_url(base_url)
    try:
        return _Probe(await llm.list_models())
    except LLMAuthError:
        return _Probe([], f"the LLM at {where} refused the API key", refused_key=True)
    except LLMError as err:
        if isinstance(err, LLMTimeoutError) or isinstance(err.__cause__,
                                                          openai.APIConnectionError):
            return _Probe([], f"cannot reach an LLM at {where} ({err}): is the server "
                              "running, and the URL right?")
        return _Probe([])  # not every server lists its models; the test request tells
    finally:
        await llm.close()


async def llm_step(c: Context) -> None:
    current_key = c.env.get("VALET_LLM_API_KEY") or c.env.get("OPENAI_API_KEY") or ""

    async def reachable(url: str) -> str | None:
        if not re.match(r"https?://[^/\s]", url):
            return "an LLM endpoint is an http:// or https:// URL such as " \
                   "http://localhost:11434/v1"
        found = await _probe(url, current_key)
        return None if found.refused_key else found.problem

    base_url = await c.q.answer(Question(
        "LLM endpoint (base URL; Ollama: http://localhost:11434/v1)", "--llm-base-url",
        default=c.settings.llm.base_url or OPENAI_URL, given=c.args.llm_base_url), reachable)
    probe = _Probe([])

    async def accepted(key: str) -> str | None:
        nonlocal probe
        probe = await _probe(base_url, key)
        return probe.problem

    key = await c.q.answer(Question(
        "API key (Enter for none, e.g. a local server)", "VALET_LLM_API_KEY",
        default=current_key, secret=True, required=False), accepted)
    if not key and await accepted(""):
        raise OnboardStop(probe.problem or "the LLM endpoint cannot be used")
    if probe.models:
        shown = ", ".join(sorted(probe.models)[:MODELS_SHOWN])
        more = len(probe.models) - MODELS_SHOWN
        c.q.say(f"   models offered: {shown}" + (f" (and {more} more)" if more > 0 else ""))

    async def answers(model: str) -> str | None:
        if probe.models and model not in probe.models:
            return f"{redact_url(base_url)} does not offer {model!r}"
        return await _try_model(base_url, key, model)

    model = await c.q.answer(Question(
        "Model", "--llm-model",
        default=c.settings.llm.model or (sorted(probe.models)[0] if probe.models else None),
        given=c.args.llm_model), answers)
    c.q.say(f"   ok: {model} answered")
    c.draft.config[("llm", "base_url")] = None if base_url == OPENAI_URL else base_url
    c.draft.config[("llm", "model")] = model
    c.draft.env["VALET_LLM_API_KEY"] = key or None
    await describe_endpoint(c.q, c.draft, OpenAILLM(
        base_url=None if base_url == OPENAI_URL else base_url, api_key=key or "not-needed",
        model=model, timeout=60.0), c.settings.loop_config().context_token_limit)


async def _try_model(base_url: str, key: str, model: str) -> str | None:
    llm = OpenAILLM(base_url=None if base_url == OPENAI_URL else base_url,
                    api_key=key or "not-needed", model=model, timeout=60.0)
    where = redact_url(base_url)
    try:
        await llm.complete([{"role": "user", "content": "Reply with the single word: ready"}],
                           None)
    except LLMModelNotFoundError:
        return f"the LLM at {where} does not know the model {model!r}"
    except LLMError as err:
        return f"the LLM at {where} did not answer a test request with {model}: " \
               f"{type(err).__name__}: {str(err)[:160]}"
    finally:
        await llm.close()
    return None


# --- Telegram -------------------------------------------------------------------------------


async def telegram_step(c: Context) -> None:
    if c.args.no_telegram:
        c.q.say("   skipped")
        return
    api_url = c.env.get("VALET_TELEGRAM_API_URL") or None
    name = ""

    async def usable(token: str) -> str | None:
        nonlocal name
        bot = make_bot(token, api_url)
        try:
            name = await bot_username(bot)
        except TelegramUnusable as err:
            return str(err)
        finally:
            await bot.shutdown()
        return None

    token = await c.q.answer(Question(
        "Bot token (Enter to skip Telegram)", "VALET_TELEGRAM_TOKEN",
        default=c.env.get("VALET_TELEGRAM_TOKEN") or "", secret=True, required=False), usable)
    if not token:
        c.q.say("   skipped: no Telegram")
        return
    c.q.say(f"   ok: the bot is @{name}")
    c.draft.env["VALET_TELEGRAM_TOKEN"] = token
    mode = await c.q.answer(Question(
        "Receive updates by polling (no public address needed) or webhook", "--telegram-mode",
        default=c.settings.telegram.mode, given=c.args.telegram_mode),
        lambda m: None if m in ("polling", "webhook") else "answer polling or webhook")
    c.draft.config[("telegram", "mode")] = mode
    c.draft.telegram_webhook = mode == "webhook"
    await _telegram_owner(c, token, api_url, name)


async def _telegram_owner(c: Context, token: str, api_url: str | None, name: str) -> None:
    if c.args.telegram_owner_id:
        if not c.args.telegram_owner_id.lstrip("-").isdigit():
            raise OnboardStop("--telegram-owner-id: a Telegram id is a number (the owner's "
                              "/start finds it)")
        c.draft.owner_telegram.append(c.args.telegram_owner_id)
        return
    known = c.settings.owner.telegram_ids
    if known and not await c.q.confirm(f"   The owner's Telegram id is {', '.join(known)}. "
                                       "Find it again?", False):
        return
    wait = c.args.wait_for_owner
    wait = wait if wait is not None else (INTERACTIVE_WAIT_SECONDS if c.q.interactive else 0)
    if wait <= 0:
        c.q.say("   the owner: valet serve prints a one-time claim code; send it to "
                f"@{name} to become the owner")
        return
    c.q.say(f"   Now send /start to @{name} from your own Telegram account "
            f"(waiting up to {wait} s)...")
    bot = make_bot(token, api_url)
    try:
        found = await wait_for_start(bot, wait)
    except TelegramUnusable as err:
        raise OnboardStop(str(err)) from None
    finally:
        await bot.shutdown()
    if found is None:
        c.q.say("   nobody sent /start: valet serve prints a one-time claim code instead")
        return
    c.q.say(f"   ok: the owner is {found.name} (Telegram id {found.user_id})")
    c.draft.owner_telegram.append(str(found.user_id))
    c.draft.owner_name_hint = (found.name.split() or [""])[0] or None


# --- SMS ------------------------------------------------------------------------------------


async def sms_step(c: Context) -> None:
    """The Twilio account, Valet's number (or Messaging Service) and the owner's phone; the
    number as Twilio holds it (`draft.sms_number`), for its webhook once the public URL is
    known."""
    if c.args.no_sms:
        c.q.say("   skipped")
        return
    sid = await c.q.answer(Question(
        "Account SID (AC...; Enter to skip SMS)", "VALET_TWILIO_ACCOUNT_SID",
        default=c.env.get("VALET_TWILIO_ACCOUNT_SID") or "", required=False),
        lambda s: None if s.startswith("AC") else "an Account SID starts with AC")
    if not sid:
        c.q.say("   skipped: no SMS")
        return
    api_url = c.env.get("VALET_TWILIO_API_URL") or None
    account = ""

    async def accepted(token: str) -> str | None:
        nonlocal account
        twilio = TwilioCheck(sid, token, api_url)
        try:
            account = await twilio.account()
        except TwilioUnusable as err:
            return str(err)
        finally:
            await twilio.close()
        return None

    token = await c.q.answer(Question(
        "Auth Token", "VALET_TWILIO_AUTH_TOKEN",
        default=c.env.get("VALET_TWILIO_AUTH_TOKEN") or None, secret=True), accepted)
    c.q.say(f"   ok: the account {account!r}")
    c.draft.env.update(VALET_TWILIO_ACCOUNT_SID=sid, VALET_TWILIO_AUTH_TOKEN=token)
    number = await _sender(c, TwilioCheck(sid, token, api_url))
    region = c.settings.sms.default_region
    owner = await c.q.answer(Question(
        "Your own mobile number, with its country code (you are the owner by SMS; Enter to "
        "skip)", "--owner-phone",
        default=(c.settings.owner.phone_numbers or [""])[0], given=c.args.owner_phone,
        required=False), lambda p: _phone_problem(p, region))
    if owner:
        c.draft.owner_phones.append(normalize(owner, region))
    c.draft.sms_number = number


async def _sender(c: Context, twilio: TwilioCheck) -> NumberState | None:
    found: NumberState | None = None
    service = ""

    async def usable(sender: str) -> str | None:
        nonlocal found, service
        try:
            if sender.startswith("MG"):
                service = await twilio.messaging_service(sender)
                return None
            number = normalize(sender, c.settings.sms.default_region)
            state = await twilio.number(number)
        except (TwilioUnusable, PhoneNumberError) as err:
            return str(err)
        if not state.sms:
            return f"{number} cannot send SMS: choose an SMS-capable number"
        found = state
        return None

    leave = "; Enter leaves SMS out" if c.q.interactive else ""
    try:
        sender = await c.q.answer(Question(
            "Valet's Twilio number (E.164, e.g. +15551234567) or Messaging Service SID (MG..."
            f"{leave})", "--sms-from",
            default=c.settings.sms.from_number or c.settings.sms.messaging_service_sid,
            given=c.args.sms_from, required=not c.q.interactive), usable)
    finally:
        await twilio.close()
    if not sender:  # a number not on the account, a service Twilio does not know: not stuck
        raise SkipStep()
    if found is not None:
        c.q.say(f"   ok: {found.number} sends SMS")
        c.draft.config[("sms", "from_number")] = found.number
        c.draft.config[("sms", "messaging_service_sid")] = None
    else:
        c.q.say(f"   ok: the Messaging Service {service!r}")
        c.draft.config[("sms", "messaging_service_sid")] = sender
        c.draft.config[("sms", "from_number")] = None
    return found


def _phone_problem(raw: str, region: str | None) -> str | None:
    try:
        normalize(raw, region)
    except PhoneNumberError as err:
        return str(err)
    return None


# --- where it is reached, and whose it is ---------------------------------------------------


async def public_url_step(c: Context) -> None:
    number = c.draft.sms_number
    sms = c.draft.env.get("VALET_TWILIO_ACCOUNT_SID") or c.env.get("VALET_TWILIO_ACCOUNT_SID")
    webhook = c.draft.telegram_webhook or (
        "VALET_TELEGRAM_TOKEN" not in c.draft.env and bool(c.env.get("VALET_TELEGRAM_TOKEN"))
        and c.settings.telegram.mode == "webhook")
    needed = [what for what, on in (("SMS", bool(sms)), ("the Telegram webhook", webhook))
              if on]
    c.q.say("   " + (f"{' and '.join(needed)} need(s) one" if needed
                     else "none needed: Telegram polls"))
    url = await c.q.answer(Question(
        "Public https address of this server (e.g. https://valet.example.com)"
        + ("" if needed else "; Enter for none"), "--public-url",
        default=c.settings.public_url or "", given=c.args.public_url,
        required=bool(needed)), plain_http_problem)
    c.draft.config[("public_url",)] = url.rstrip("/") or None
    if not url or number is None:
        return
    inbound = url.rstrip("/") + "/sms/inbound"
    if number.sms_url == inbound:
        return
    asked = f"   Point {number.number}'s incoming SMS at {inbound}?"
    if not (await c.q.confirm(asked, True) and await _point_webhook(c, number, inbound)):
        c.draft.next_steps.append(f"In the Twilio console, set {number.number}'s 'A message "
                                  f"comes in' to Webhook, HTTP POST, {inbound}")


async def _point_webhook(c: Context, number: NumberState, inbound: str) -> bool:
    """True when Twilio took it; otherwise the reason is said (the rest stands: this one is
    then done by hand)."""
    twilio = TwilioCheck(c.draft.env["VALET_TWILIO_ACCOUNT_SID"] or "",
                         c.draft.env["VALET_TWILIO_AUTH_TOKEN"] or "",
                         c.env.get("VALET_TWILIO_API_URL") or None)
    try:
        await twilio.point_sms_webhook(number, inbound)
    except TwilioUnusable as err:
        c.q.say(f"   {err}")
        return False
    finally:
        await twilio.close()
    c.q.say(f"   ok: Twilio posts {number.number}'s messages to {inbound}")
    return True


async def person_step(c: Context) -> None:
    zone = await c.q.answer(Question(
        "Your timezone (an IANA name such as Europe/Paris)", "--timezone",
        default=c.settings.timezone if c.settings.timezone != "UTC" else local_zone(),
        given=c.args.timezone), _zone_problem)
    named = c.settings.owner.name
    name = await c.q.answer(Question(
        "What should Valet call you", "--owner-name",
        default=c.draft.owner_name_hint if named == OwnerSettings().name and
        c.draft.owner_name_hint else named, given=c.args.owner_name))
    c.draft.config[("timezone",)] = zone
    c.draft.config[("owner", "name")] = name


def _zone_problem(zone: str) -> str | None:
    try:
        ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError):
        return f"{zone!r} is not a timezone Valet knows (an IANA name such as America/New_York)"
    return None


def local_zone() -> str:
    """This machine's zone when it can be told (TZ, /etc/localtime), else UTC."""
    if os.environ.get("TZ") and not _zone_problem(os.environ["TZ"]):
        return os.environ["TZ"]
    try:
        target = str(Path("/etc/localtime").resolve())
    except OSError:
        return "UTC"
    _, found, zone = target.partition("zoneinfo/")
    return zone if found and not _zone_problem(zone) else "UTC"
