"""Slash commands the gateway answers itself, without the LLM: /link, /pair, /whoami."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from bot.clock import Clock
from bot.envelopes import Reply, TurnStop
from bot.gateway.access import AccessControl, one_line, quoted
from bot.gateway.identity import IdentityStore
from bot.gateway.inbox import InboxRow
from bot.gateway.users import User, UserStore

Notify = Callable[..., Awaitable[Any]]


class GatewayCommands:
    def __init__(self, access: AccessControl, identities: IdentityStore, users: UserStore,
                 clock: Clock, notify_user: Notify) -> None:
        self.access = access
        self.identities = identities
        self.users = users
        self.clock = clock
        self.notify_user = notify_user

    async def handle(self, row: InboxRow, user: User) -> Reply | None:
        """The reply to a gateway command; None when the text is not one (it goes to the
        orchestrator)."""
        words = row.text.strip().split()
        if not words or row.button is not None:
            return None
        command = words[0].lower().split("@", 1)[0]  # Telegram sends /cmd@botname in groups
        if command == "/link" and len(words) == 1:
            return await self._link(user)
        if command == "/pair":
            return await self._pair(user, words[1:])
        if command == "/whoami":
            return await self._whoami(user)
        return None

    async def _link(self, user: User) -> Reply:
        code = await self.identities.issue_link_code(user.id, at=self.clock.now())
        return Reply(f"Your link code is {code}. Within 10 minutes, send \"/link {code}\" to me "
                     "from your other account (Telegram or SMS) and I'll know it's you there "
                     "too.", stop=TurnStop.COMMAND)

    async def _whoami(self, user: User) -> Reply:
        ids = await self.identities.of_user(user.id)
        linked = ", ".join(f"{i.channel} {i.address}" for i in ids) or "none"
        return Reply(f"You are {user.display_name or user.id} ({user.id}); timezone "
                     f"{user.timezone}; linked: {linked}.", stop=TurnStop.COMMAND)

    async def _pair(self, user: User, args: list[str]) -> Reply:
        if not user.is_owner:
            return Reply("Only the owner can approve new people.", stop=TurnStop.COMMAND)
        now = self.clock.now()
        if not args or args[0].lower() == "list":
            pending = await self.access.list_pairings(now)
            if not pending:
                return Reply("Nobody is waiting to be let in.", stop=TurnStop.COMMAND)
            lines = [f"{p.code}: {quoted(p.display_name) if p.display_name else '(no name)'}"
                     f" on {p.channel} {one_line(p.address)}" for p in pending]
            return Reply("Waiting to be let in:\n" + "\n".join(lines), stop=TurnStop.COMMAND)
        if len(args) != 2 or args[0].lower() not in ("approve", "deny"):
            return Reply("Use /pair list, /pair approve CODE or /pair deny CODE.",
                         stop=TurnStop.COMMAND)
        code = args[1].upper()
        if args[0].lower() == "deny":
            denied = await self.access.deny(code, now)
            return Reply(f"Denied {code}." if denied else f"No pending request {code}.",
                         stop=TurnStop.COMMAND)
        approved = await self.access.approve(code, now)
        if approved is None:
            return Reply(f"No pending request {code} (it may have expired).",
                         stop=TurnStop.COMMAND)
        await self.notify_user(approved, "You're in! I'm your assistant now: ask me anything.",
                               dedupe_key=f"paired:{code}")
        return Reply(f"Approved {code}: {approved.display_name or approved.id} can talk to me "
                     "now.", stop=TurnStop.COMMAND)
