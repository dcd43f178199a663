"""Telegram's step of `valet onboard`: the bot's token (getMe), polling or a webhook, and the
owner found by their /start (or claimed later with the code `valet serve` prints)."""

from __future__ import annotations

from bot.setup.ask import OnboardStop, Question
from bot.setup.onboarding import Context, Parser, Step
from channels.telegram.checks import TelegramUnusable, bot_username, make_bot, wait_for_start

OWNER_KEY = "telegram_ids"
TOKEN_ENV = "VALET_TELEGRAM_TOKEN"
WEBHOOK_SECRET_ENV = "VALET_TELEGRAM_WEBHOOK_SECRET"
INTERACTIVE_WAIT_SECONDS = 120  # for the owner's /start; a script waits only when told


def flags(p: Parser) -> None:
    p.add_argument("--no-telegram", action="store_true", help="leave Telegram out")
    p.add_argument("--telegram-mode", choices=["polling", "webhook"],
                   help="polling (no public address needed, the default) or webhook")
    p.add_argument("--telegram-owner-id", help="the owner's Telegram id (else found by their "
                   "/start, or claimed later with the code valet serve prints)")
    p.add_argument("--wait-for-owner", type=int, metavar="SECONDS", help="how long to wait "
                   "for the owner's /start (default: 120 in a terminal, 0 with --yes)")


def current(c: Context) -> str | None:
    if not c.env.get(TOKEN_ENV):
        return None
    owners = c.settings.owner.telegram_ids
    who = f", the owner's id {', '.join(owners)}" if owners else ""
    return f"a bot token ({c.settings.telegram.mode}{who})"


def public_url_for(c: Context) -> str | None:
    """Webhook mode needs one: chosen now, or set up before and kept."""
    webhook = c.draft.config.get(("telegram", "mode")) == "webhook" or (
        TOKEN_ENV not in c.draft.env and bool(c.env.get(TOKEN_ENV))
        and c.settings.telegram.mode == "webhook")
    return "the Telegram webhook" if webhook else None


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
    if mode == "webhook":
        c.draft.secrets.append(WEBHOOK_SECRET_ENV)
    await _telegram_owner(c, token, api_url, name)


async def _telegram_owner(c: Context, token: str, api_url: str | None, name: str) -> None:
    if c.args.telegram_owner_id:
        if not c.args.telegram_owner_id.lstrip("-").isdigit():
            raise OnboardStop("--telegram-owner-id: a Telegram id is a number (the owner's "
                              "/start finds it)")
        c.draft.add_owner(OWNER_KEY, c.args.telegram_owner_id)
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
    c.draft.add_owner(OWNER_KEY, str(found.user_id))
    c.draft.owner_name_hint = (found.name.split() or [""])[0] or None


STEP = Step("Telegram (a bot from @BotFather: /newbot gives its token)", telegram_step,
            current, flags=flags, public_url_for=public_url_for)
