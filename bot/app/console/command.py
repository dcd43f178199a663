"""`/console`: the owner asks for a login link in their own chat (any channel); `valet
console-link` makes the same link from a shell."""

from __future__ import annotations

from datetime import datetime

from bot.config import Settings
from bot.contracts.people import User
from bot.contracts.turn import TurnContext
from bot.gateway.sign_in_links import LOGIN_PATH
from bot.people.console_login import LINK_TTL, ConsoleLogins
from bot.turn.commands import Command
from channels.registry import specs
from persona import Persona
from persona.lines import fill


async def login_url(logins: ConsoleLogins, settings: Settings, owner: User,
                    at: datetime) -> str:
    """A fresh one-time link for the owner (bot.people.console_login.NotOwner otherwise)."""
    token = await logins.issue_link(owner, at)
    return f"{settings.console_url()}{LOGIN_PATH}?t={token}"


def link_line(persona: Persona, url: str) -> str:
    return fill(persona.lines.console_link, url=url,
                minutes=int(LINK_TTL.total_seconds() // 60))


def console_command(settings: Settings, logins: ConsoleLogins, persona: Persona) -> Command:
    lines = persona.lines
    channels = specs(settings)

    async def console(ctx: TurnContext, args: list[str]) -> str:
        if not settings.console.enabled:
            return lines.console_off
        # The reply goes where the owner wrote: never into a group chat (a Telegram group).
        spec = channels.named(ctx.msg.channel)
        if spec is not None and spec.group_chat(ctx.msg.address):
            return lines.console_private_only
        return link_line(persona, await login_url(logins, settings, ctx.user,
                                                  ctx.tool_ctx.clock.now()))

    return Command("/console", lines.about_console, console,
                   owner_only=True, refusal=lines.console_owner_only)
