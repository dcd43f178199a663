"""The Twilio account as `valet onboard` asks for it, for whichever channel on Twilio asks
first (SMS, WhatsApp): its SID, then its auth token, tried at once; the next channel finds it
in the draft and asks nothing."""

from __future__ import annotations

from bot.setup.ask import Question
from bot.setup.onboarding import Context
from channels.twilio.checks import TwilioCheck, TwilioUnusable
from channels.twilio.rest import ACCOUNT_ENV, API_URL_ENV, TOKEN_ENV


async def ask_account(c: Context, channel: str) -> tuple[str, str] | None:
    """The account's SID and token, asked (the token tried), written to the draft's
    environment; None when the person leaves `channel` out (said)."""
    if c.draft.env.get(ACCOUNT_ENV) and c.draft.env.get(TOKEN_ENV):
        return c.draft.env[ACCOUNT_ENV] or "", c.draft.env[TOKEN_ENV] or ""
    sid = await c.q.answer(Question(
        f"Account SID (AC...; Enter to skip {channel})", ACCOUNT_ENV,
        default=c.env.get(ACCOUNT_ENV) or "", required=False),
        lambda s: None if s.startswith("AC") else "an Account SID starts with AC")
    if not sid:
        c.q.say(f"   skipped: no {channel}")
        return None
    api_url = c.env.get(API_URL_ENV) or None
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
        "Auth Token", TOKEN_ENV, default=c.env.get(TOKEN_ENV) or None, secret=True), accepted)
    c.q.say(f"   ok: the account {account!r}")
    c.draft.env.update({ACCOUNT_ENV: sid, TOKEN_ENV: token})
    return sid, token
