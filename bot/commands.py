"""Every slash command, in one place. None of them costs an LLM call.

Commands are the first step of a turn (they answer and end it, and are not written to the
conversation the LLM reads); `/stop` is also acted on at the gateway's door, because it must
reach a turn that is already running. Other packages add their own (`/tasks`, `/memory`) with
`register` from the composition root.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from bot.approvals.flow import ApprovalFlow
from bot.approvals.options import Option
from bot.envelopes import ButtonPress, PromptKind, TurnStop
from bot.gateway.access import AccessControl, one_line, quoted
from bot.gateway.identity import IdentityStore
from bot.gateway.users import User
from bot.tasks.resume import Resumer
from bot.turn import Answered, Continue, StepResult, TurnContext

# A handler says what to answer (a command turn), or answers with its own stop reason.
Handler = Callable[[TurnContext, list[str]], Awaitable["str | Answered"]]
Notify = Callable[..., Awaitable[object]]


@dataclass(frozen=True)
class Command:
    name: str  # "/pending"
    help: str  # one line for /help
    handler: Handler
    owner_only: bool = False
    channels: frozenset[str] | None = None  # None: every channel
    refusal: str = "Only the owner can do that."  # said to anyone else, for owner_only
    # Owner-only and unlisted: anyone else gets the answer to a command that does not exist.
    hidden: bool = False


def command_word(text: str) -> tuple[str, list[str]] | None:
    """("/pending", args) when the text is a slash command; Telegram's "/cmd@botname" too."""
    words = text.strip().split()
    if not words or not words[0].startswith("/") or len(words[0]) < 2:
        return None
    return words[0].lower().split("@", 1)[0], words[1:]


class Commands:
    """Step: slash commands answer at once."""

    name = "commands"

    def __init__(self, *, access: AccessControl, identities: IdentityStore,
                 approvals: ApprovalFlow | None, tasks: Resumer | None, notify_user: Notify,
                 assistant_name: str = "Valet") -> None:
        self.access = access
        self.identities = identities
        self.approvals = approvals
        self.tasks = tasks
        self.notify_user = notify_user
        self.assistant_name = assistant_name
        self._table: dict[str, Command] = {}
        for command in (
            Command("/help", "what I understand", self._help),
            Command("/pending", "what waits for your OK or your answer", self._pending),
            Command("/cancel", "drop the task waiting for your answer", self._cancel),
            Command("/stop", "stop what I'm doing right now", self._stop),
            Command("/link", "join another channel (Telegram, SMS) to you", self._link),
            Command("/whoami", "who I think you are, and what is linked", self._whoami),
            Command("/pair", "let a new person in: /pair list | approve CODE | deny CODE",
                    self._pair, owner_only=True,
                    refusal="Only the owner can approve new people."),
            Command("/start", "say hello", self._start, channels=frozenset({"telegram"})),
        ):
            self.register(command)

    def register(self, command: Command) -> None:
        self._table[command.name] = command

    def listed(self, user: User, channel: str) -> list[Command]:
        return [c for c in self._table.values()
                if (user.is_owner or not (c.owner_only or c.hidden))
                and (c.channels is None or channel in c.channels)]

    async def before(self, ctx: TurnContext) -> StepResult:
        button = ctx.msg.button
        if button is not None and button.kind is PromptKind.PAIRING:
            return await self._pairing_button(ctx, button)
        if button is not None or ctx.msg.from_trigger:
            return Continue()
        found = command_word(ctx.msg.text)
        if found is None:
            return Continue()
        word, args = found
        command = self._table.get(word)
        if command is not None and command.hidden and not ctx.user.is_owner:
            command = None
        if command is None:
            return Answered(text=f"I don't know {word}. /help lists what I understand.",
                            stop=TurnStop.COMMAND)
        if command.owner_only and not ctx.user.is_owner:
            return Answered(text=command.refusal, stop=TurnStop.COMMAND)
        said = await command.handler(ctx, args)
        return said if isinstance(said, Answered) else Answered(text=said, stop=TurnStop.COMMAND)

    async def _pairing_button(self, ctx: TurnContext, button: ButtonPress) -> StepResult:
        """The owner tapped Approve or Cancel under a pairing notice: /pair by button."""
        if not ctx.user.is_owner:
            return Answered(text="Only the owner can approve new people.", stop=TurnStop.COMMAND)
        verb = "approve" if button.choice is Option.APPROVE else "deny"
        return Answered(text=await self._pair(ctx, [verb, button.approval_id]),
                        stop=TurnStop.COMMAND)

    # --- the commands ----------------------------------------------------------------------

    async def _help(self, ctx: TurnContext, args: list[str]) -> str:
        lines = [f"{c.name}: {c.help}" for c in self.listed(ctx.user, ctx.msg.channel)]
        return "Commands:\n" + "\n".join(lines) + "\nAnything else, just say it."

    async def _start(self, ctx: TurnContext, args: list[str]) -> str:
        return (f"Hi! I'm {self.assistant_name}, your assistant. Ask me anything, or send "
                "/help to see what else I understand.")

    async def _pending(self, ctx: TurnContext, args: list[str]) -> str:
        parts = []
        if self.approvals is not None:
            pending = await self.approvals.list_pending_approvals(ctx.user.id)
            if pending:
                parts.append(self.approvals.listing(pending))
        if self.tasks is not None:
            waiting = await self.tasks.pool.waiting(ctx.user.id)
            if waiting:
                parts.append("Waiting for your answer:\n" + "\n".join(
                    f"{i}. {t.label}: “{t.question}”" for i, t in enumerate(waiting, 1)))
        return "\n\n".join(parts) or "Nothing is waiting for your approval or your answer."

    async def _cancel(self, ctx: TurnContext, args: list[str]) -> str | Answered:
        said = await self.tasks.cancel_latest(ctx.user.id) if self.tasks else None
        if said is None:
            return "Nothing is waiting for your answer, so there's nothing to cancel."
        return Answered(text=said, stop=TurnStop.CANCELLED)

    async def _stop(self, ctx: TurnContext, args: list[str]) -> str:
        # A running turn is stopped at the gateway's door; reaching here means none ran.
        return "Nothing is running right now."

    async def _link(self, ctx: TurnContext, args: list[str]) -> str:
        if args:
            return ("You're already known here. Send \"/link\" here to get a code, then "
                    "\"/link CODE\" from your other account.")
        code = await self.identities.issue_link_code(ctx.user.id, at=ctx.tool_ctx.clock.now())
        return (f"Your link code is {code}. Within 10 minutes, send \"/link {code}\" to me from "
                "your other account (Telegram or SMS) and I'll know it's you there too.")

    async def _whoami(self, ctx: TurnContext, args: list[str]) -> str:
        user = ctx.user
        ids = await self.identities.of_user(user.id)
        linked = ", ".join(f"{i.channel} {i.address}" for i in ids) or "none"
        return (f"You are {user.display_name or user.id} ({user.id}); timezone "
                f"{user.timezone}; linked: {linked}.")

    async def _pair(self, ctx: TurnContext, args: list[str]) -> str:
        now = ctx.tool_ctx.clock.now()
        if not args or args[0].lower() == "list":
            pending = await self.access.list_pairings(now)
            if not pending:
                return "Nobody is waiting to be let in."
            lines = [f"{p.code}: {quoted(p.display_name) if p.display_name else '(no name)'}"
                     f" on {p.channel} {one_line(p.address)}" for p in pending]
            return "Waiting to be let in:\n" + "\n".join(lines)
        if len(args) != 2 or args[0].lower() not in ("approve", "deny"):
            return "Use /pair list, /pair approve CODE or /pair deny CODE."
        code = args[1].upper()
        if args[0].lower() == "deny":
            denied = await self.access.deny(code, now)
            return f"Denied {code}." if denied else f"No pending request {code}."
        approved = await self.access.approve(code, now)
        if approved is None:
            return f"No pending request {code} (it may have expired)."
        await self.notify_user(approved, "You're in! I'm your assistant now: ask me anything.",
                               dedupe_key=f"paired:{code}")
        return f"Approved {code}: {approved.display_name or approved.id} can talk to me now."
