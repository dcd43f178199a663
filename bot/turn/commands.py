"""Every slash command, in one place. None of them costs an LLM call.

Commands are the first step of a turn (they answer and end it, and are not written to the
conversation the LLM reads); `/stop` is also acted on at the gateway's door, because it must
reach a turn that is already running. Other packages add their own (`/tasks`, `/memory`) with
`register` from the composition root.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass

from bot.approvals.flow import ApprovalFlow
from bot.channel import MenuCommand
from bot.contracts.envelopes import ButtonPress, PromptKind, TurnStop
from bot.contracts.options import Option
from bot.contracts.people import User
from bot.contracts.turn import Answered, Continue, StepResult, TurnContext
from bot.people.access import AccessControl, one_line, quoted
from bot.people.identity import IdentityStore
from bot.tasks.resume import Resumer
from persona.catalog import LANGUAGES, reworded, said_label
from persona.lines import Lines, fill
from persona.speaking import speaking_to

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
    refusal: str | None = None  # said to anyone else, for owner_only (None: the usual line)
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
    reads = None

    def __init__(self, *, access: AccessControl, identities: IdentityStore,
                 approvals: ApprovalFlow | None, tasks: Resumer | None, notify_user: Notify,
                 lines: Lines, assistant_name: str = "Valet",
                 start_on: Collection[str] = ()) -> None:
        """`start_on`: the channels whose clients send /start first (bot.contracts.channels:
        ChannelTraits.sends_start); it is listed there only."""
        self.access = access
        self.identities = identities
        self.approvals = approvals
        self.tasks = tasks
        self.notify_user = notify_user
        self.lines = lines  # what the commands say, and what /help says of each
        self.assistant_name = assistant_name
        self._table: dict[str, Command] = {}
        for command in (
            Command("/help", lines.about_help, self._help),
            Command("/pending", lines.about_pending, self._pending),
            Command("/cancel", lines.about_cancel, self._cancel),
            Command("/stop", lines.about_stop, self._stop),
            Command("/link", lines.about_link, self._link),
            Command("/whoami", lines.about_whoami, self._whoami),
            Command("/pair", lines.about_pair, self._pair, owner_only=True,
                    refusal=lines.pairing_owner_only),
            Command("/start", lines.about_start, self._start, channels=frozenset(start_on)),
        ):
            self.register(command)

    def register(self, command: Command) -> None:
        self._table[command.name] = command

    def listed(self, user: User, channel: str) -> list[Command]:
        return [c for c in self._table.values()
                if (user.is_owner or not (c.owner_only or c.hidden))
                and (c.channels is None or channel in c.channels)]

    def menu(self, channel: str) -> list[MenuCommand]:
        """Every command `channel` offers, as its command menu shows them (bot.channel)."""
        return [MenuCommand(c.name, c.help, c.owner_only, self._in_languages(c.help))
                for c in self._table.values() if c.channels is None or channel in c.channels]

    def _in_languages(self, line: str) -> tuple[tuple[str, str], ...]:
        """A /help line in every language Valet speaks (the persona's rewording included)."""
        said = []
        for language in LANGUAGES:
            with speaking_to(language):
                said.append((language, reworded(self.lines, line)))
        return tuple(said)

    async def before(self, ctx: TurnContext) -> StepResult:
        button = ctx.msg.button
        if button is not None and button.kind is PromptKind.PAIRING:
            return await self._pairing_button(ctx, button)
        if button is not None or ctx.msg.from_trigger:
            return Continue()
        found = command_word(ctx.msg.text)
        if found is None:
            return await self._pairing_words(ctx) or Continue()
        word, args = found
        command = self._table.get(word)
        if command is not None and command.hidden and not ctx.user.is_owner:
            command = None
        if command is None:
            return Answered(text=fill(self.lines.command_unknown, command=word),
                            stop=TurnStop.COMMAND)
        if command.owner_only and not ctx.user.is_owner:
            return Answered(text=reworded(self.lines, command.refusal or "")
                            or self.lines.command_owner_only,
                            stop=TurnStop.COMMAND)
        said = await command.handler(ctx, args)
        return said if isinstance(said, Answered) else Answered(text=said, stop=TurnStop.COMMAND)

    async def _pairing_button(self, ctx: TurnContext, button: ButtonPress) -> StepResult:
        """The owner tapped Approve or Cancel under a pairing notice: /pair by button."""
        if not ctx.user.is_owner:
            return Answered(text=self.lines.pairing_owner_only, stop=TurnStop.COMMAND)
        verb = "approve" if button.choice is Option.APPROVE else "deny"
        return Answered(text=await self._pair(ctx, [verb, button.approval_id]),
                        stop=TurnStop.COMMAND)

    async def _pairing_words(self, ctx: TurnContext) -> Answered | None:
        """"PAIR 4K7QXZ" / "DENY 4K7QXZ" (the persona's words) from the owner, naming a
        pairing request Valet knows: /pair by its code, with no LLM. This is how a pairing
        notice by SMS is answered (never a bare digit); it works on every channel."""
        words = ctx.msg.text.split()
        if len(words) != 2 or not ctx.user.is_owner:
            return None
        verb = {self.lines.pairing_approve_word.lower(): "approve",
                self.lines.pairing_deny_word.lower(): "deny"}.get(words[0].lower())
        code = words[1].strip(".!").upper()
        if verb is None or not await self.access.pairing_outcomes(
                [code], ctx.tool_ctx.clock.now()):
            return None  # "deny access": not a code Valet ever gave out
        return Answered(text=await self._pair(ctx, [verb, code]), stop=TurnStop.COMMAND)

    # --- the commands ----------------------------------------------------------------------

    async def _help(self, ctx: TurnContext, args: list[str]) -> str:
        listed = [f"{c.name}: {reworded(self.lines, c.help)}"  # in the reader's language
                  for c in self.listed(ctx.user, ctx.msg.channel)]
        return fill(self.lines.help_text, commands="\n".join(listed))

    async def _start(self, ctx: TurnContext, args: list[str]) -> str:
        return fill(self.lines.start_text, name=self.assistant_name)

    async def _pending(self, ctx: TurnContext, args: list[str]) -> str:
        parts = []
        if self.approvals is not None:
            pending = await self.approvals.list_pending_approvals(ctx.user.id)
            if pending:
                parts.append(self.approvals.listing(pending))
            lately = await self.approvals.lately(ctx.user.id)
            if lately:  # what was approved but not done: said plainly here too
                parts.append(lately)
        if self.tasks is not None:
            waiting = await self.tasks.pool.waiting(ctx.user.id)
            if waiting:
                parts.append(fill(self.lines.pending_tasks, tasks="\n".join(
                    f"{i}. {said_label(t.label)}: “{t.question}”"
                    for i, t in enumerate(waiting, 1))))
        return "\n\n".join(parts) or self.lines.pending_none

    async def _cancel(self, ctx: TurnContext, args: list[str]) -> str | Answered:
        said = await self.tasks.cancel_latest(ctx.user.id) if self.tasks else None
        if said is None:
            return self.lines.cancel_nothing
        return Answered(text=said, stop=TurnStop.CANCELLED)

    async def _stop(self, ctx: TurnContext, args: list[str]) -> str:
        # A running turn is stopped at the gateway's door; reaching here means none ran.
        return self.lines.stop_nothing_running

    async def _link(self, ctx: TurnContext, args: list[str]) -> str:
        if args:
            return self.lines.link_already_known
        code = await self.identities.issue_link_code(ctx.user.id, at=ctx.tool_ctx.clock.now())
        return fill(self.lines.link_code, code=code)

    async def _whoami(self, ctx: TurnContext, args: list[str]) -> str:
        user = ctx.user
        ids = await self.identities.of_user(user.id)
        linked = ", ".join(f"{i.channel} {i.address}" for i in ids) or "none"
        return fill(self.lines.whoami, name=await self.identities.name_of(user),
                    timezone=user.timezone, linked=linked)

    async def _pair(self, ctx: TurnContext, args: list[str]) -> str:
        now = ctx.tool_ctx.clock.now()
        if not args or args[0].lower() == "list":
            pending = await self.access.list_pairings(now)
            if not pending:
                return self.lines.pairing_none
            waiting = [f"{p.code}: {quoted(p.display_name) if p.display_name else '(no name)'}"
                       f" on {p.channel} {one_line(p.address)}" for p in pending]
            return fill(self.lines.pairing_waiting, requests="\n".join(waiting))
        if len(args) != 2 or args[0].lower() not in ("approve", "deny"):
            return self.lines.pairing_usage
        code = args[1].upper()
        if args[0].lower() == "deny":
            denied = await self.access.deny(code, now)
            return fill(self.lines.pairing_denied if denied else self.lines.pairing_no_request,
                        code=code)
        approved = await self.access.approve(code, now)
        if approved is None:
            return fill(self.lines.pairing_no_request_expired, code=code)
        with speaking_to(approved.language):  # theirs, not the owner's
            welcome = self.lines.pairing_welcome
        await self.notify_user(approved, welcome, dedupe_key=f"paired:{code}")
        return fill(self.lines.pairing_approved, code=code,
                    name=await self.identities.name_of(approved))
