"""Loop modes (`loop.mode`): how much machinery a turn gets.

    react   every request carries the tools the conversation needs (bot.tools.capabilities)
    simple  one request without tool schemas: the model answers from what it knows
    auto    simple for a message that needs no tool, react for everything else

In auto, "needs no tool" is decided here, without an LLM call, by a cheap local rule: the
person only greets, thanks, says goodbye or laughs ("hi", "thanks!", "good morning Valet").
Anything else, and any turn with more to it (a trigger, a button, a photo, a result that
joined the turn, an approval being decided), is react. A turn that starts simple
becomes react as soon as it needs to (a message added mid-turn, a model that asks for a tool
anyway), so the rule can only save tokens, never an answer.
"""

from __future__ import annotations

import re
from typing import Literal

from bot.contracts.turn import StepResult, TurnContext
from bot.loop.types import REACT, SIMPLE

Mode = Literal["auto", "react", "simple"]

# Words of greetings, thanks, goodbyes and laughter, in English and a few other common
# languages. Never a word that can agree to something ("ok", "yes", "great", "perfect",
# "sure"): after "Shall I send it?" that word is an instruction, and needs the tools.
SMALL_TALK = frozenset("""
hi hello hey heya hiya yo howdy hallo hola salut bonjour bonsoir ciao ola olá servus moin
good morning afternoon evening night gm gn day
thanks thank you thx ty tysm cheers merci danke gracias grazie obrigado obrigada
bye goodbye cya later see ya soon take care
how are r u doing going whats up sup hows it all well today
lol haha hahaha hehe lmao
so much very a lot again dear there
""".split())
MAX_WORDS = 8


def is_small_talk(text: str, assistant_name: str = "") -> bool:
    """True when every word of the message is a greeting, a thanks, a goodbye or laughter
    (the assistant's own name may be among them)."""
    words = re.findall(r"\w+", text.lower().replace("'", "").replace("’", ""))
    name = assistant_name.lower()
    return 0 < len(words) <= MAX_WORDS and all(w in SMALL_TALK or w == name for w in words)


def choose_mode(configured: str, ctx: TurnContext, before: StepResult,
                assistant_name: str = "") -> str:
    """SIMPLE or REACT for this turn, from `loop.mode` and the message."""
    if configured in (SIMPLE, REACT):
        return configured
    msg = ctx.msg
    if msg.from_trigger or msg.button is not None or msg.media or msg.images:
        return REACT
    if before.joined or before.drafts or before.prompts:
        return REACT
    return SIMPLE if is_small_talk(msg.text, assistant_name) else REACT
