"""What `valet doctor` asks of the Twilio account, for every channel on it: the credentials
(refused ones stop there: every other call would be refused the same way)."""

from __future__ import annotations

from collections.abc import Mapping

from bot.setup.report import Report
from channels.twilio.checks import CredentialsRefused, TwilioCheck, TwilioUnusable
from channels.twilio.rest import ACCOUNT_ENV, API_URL_ENV, TOKEN_ENV


async def account_check(env: Mapping[str, str], report: Report, channel: str
                        ) -> TwilioCheck | None:
    """The account as Twilio sees it, reported; a check to go on with (closed by the caller),
    or None when the channel is off or the credentials were refused (said)."""
    sid = env.get(ACCOUNT_ENV)
    if not sid:
        report.off(f"{channel}: set {ACCOUNT_ENV} and {TOKEN_ENV} to turn it on "
                   "(valet onboard)")
        return None
    token = env.get(TOKEN_ENV)
    if not token:
        report.bad(f"{channel}: {TOKEN_ENV} is not set (Twilio console, Account info)")
        return None
    twilio = TwilioCheck(sid, token, env.get(API_URL_ENV) or None)
    try:
        report.ok(f"Twilio account {await twilio.account()!r}")
    except CredentialsRefused as err:
        report.bad(str(err))
        await twilio.close()
        return None
    except TwilioUnusable as err:
        report.bad(str(err))
    return twilio
