"""A person's language, set three ways that all end in `UserStore.set_language`: `/language
es` (the command here), in words through the profile tool (agents.tools.profile.set_my_language),
or by the owner (`valet users set ... --language`, the console's People page). And proposed:
after the person's first messages, when they are clearly in another language than the one
Valet writes to them in, the reply ends with the offer in that language ("¿Prefieres que te
escriba en español? Responde SÍ"). It is made once ever; the next message is its answer: the
yes word sets the language, anything else closes the offer and changes nothing. So a
language is never switched on a guess, nor back and forth."""

from __future__ import annotations

import unicodedata

from bot.contracts.envelopes import TurnStop
from bot.contracts.turn import Answered, Continue, StepResult, TurnContext
from bot.people.users import UserStore
from bot.text.language_guess import guess_language
from bot.turn.commands import Command
from persona.catalog import LANGUAGES, OWN_NAMES, language_named
from persona.lines import Lines, fill
from persona.speaking import speaking_to

OFFER_WITHIN = 6  # the person's first messages: after these, nothing is proposed


def language_command(users: UserStore, lines: Lines, default: str) -> Command:
    """/language: which one Valet writes in; /language CODE (or its name) changes it.
    `default`: the persona's language, for a person who chose none."""
    async def language(ctx: TurnContext, args: list[str]) -> str:
        codes = ", ".join(LANGUAGES)
        if not args:
            current = ctx.user.language or default
            return fill(lines.language_current, language=OWN_NAMES.get(current, current),
                        codes=codes)
        code = language_named(" ".join(args))
        if code is None:
            return fill(lines.language_unknown, code=" ".join(args), codes=codes)
        await users.set_language(ctx.user.id, code, ctx.tool_ctx.clock.now())
        with speaking_to(code):  # said in the new language already
            return fill(lines.language_set, language=OWN_NAMES[code])

    return Command("/language", lines.about_language, language)


def _plain(text: str) -> str:
    stripped = "".join(c for c in unicodedata.normalize("NFKD", text)
                       if not unicodedata.combining(c))
    return stripped.strip().strip(".!¡¿?").lower()


class OfferLanguage:
    """Step: proposes a language once, after the person's first messages; reads the answer."""

    name = "language offer"
    reads = None  # the person's own row, read with the turn

    def __init__(self, users: UserStore, lines: Lines, default: str) -> None:
        self.users = users
        self.lines = lines
        self.default = default  # the persona's language: what a person without one reads

    async def before(self, ctx: TurnContext) -> StepResult:
        if ctx.msg.from_trigger or ctx.msg.button is not None or \
                ctx.msg.text.lstrip().startswith("/"):
            return Continue()
        user = ctx.user
        if user.language_offer is not None:
            return await self._answered(ctx, user.language_offer)
        if user.language is not None:
            return Continue()
        theirs = [str(m["content"]) for m in ctx.history
                  if m.get("role") == "user" and isinstance(m.get("content"), str)]
        if len(theirs) >= OFFER_WITHIN:
            return Continue()
        guess = guess_language("\n".join([*theirs, ctx.msg.text]))
        if guess is None or guess.language == self.default:
            return Continue()
        if not await self.users.offer_language(user.id, guess.language):
            return Continue()
        with speaking_to(guess.language):  # asked in the language it proposes
            offer = fill(self.lines.language_offer, language=OWN_NAMES[guess.language],
                         yes=self.lines.language_yes_word)
        return Continue(after=(offer,))

    async def _answered(self, ctx: TurnContext, offered: str) -> StepResult:
        now = ctx.tool_ctx.clock.now()
        with speaking_to(offered):
            yes = _plain(self.lines.language_yes_word)
        if _plain(ctx.msg.text) not in (yes, "yes"):
            await self.users.close_language_offer(ctx.user.id, now)  # asked once: not again
            return Continue()
        await self.users.set_language(ctx.user.id, offered, now)
        with speaking_to(offered):
            said = fill(self.lines.language_set, language=OWN_NAMES[offered])
        return Answered(text=said, stop=TurnStop.COMMAND)
