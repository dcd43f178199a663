"""The owner's console sign-in link as it travels in a message: the outbox keeps a message's
text until it is sent, and no longer keeps the link's token after. The database stores the
link's token only as a hash (bot.people.console_login), so a copy of the database (a backup,
a stolen file) must not sign anyone in from the outbox either."""

from __future__ import annotations

import re

LOGIN_PATH = "/console/login"
_LINK = re.compile(re.escape(LOGIN_PATH) + r"\?t=[A-Za-z0-9_\-]+")
REDACTED = LOGIN_PATH + "?t=(used or expired: removed)"


def redacted(text: str) -> str | None:
    """The text with every sign-in link's token taken out; None when it has none."""
    cleaned = _LINK.sub(REDACTED, text)
    return cleaned if cleaned != text else None
