"""What is set up already, step by step, in a few words: what `valet onboard` offers to keep
when it runs again (after Ctrl-C, or to change one part). Read from the settings and the
environment (the env file included) as they were when it started; no service is asked. A
channel's step says its own (channels/<name>/onboard.py)."""

from __future__ import annotations

from bot.config.sections import OwnerSettings
from bot.setup.onboarding import Context
from bot.text.redact import redact_url


def llm(c: Context) -> str | None:
    if not c.settings.llm.model:
        return None
    return f"{c.settings.llm.model} at {redact_url(c.settings.llm.base_url or 'OpenAI')}"


def public_url(c: Context) -> str | None:
    return c.settings.public_url


def person(c: Context) -> str | None:
    name, zone = c.settings.owner.name, c.settings.timezone
    if name == OwnerSettings().name and zone == "UTC":
        return None
    return f"{name}, {zone}"
