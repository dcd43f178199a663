"""Extraction: after a turn is stored, learn what the person said about themselves.

`after_turn` is the orchestrator's hook: it only decides whether the turn has anything to
learn and starts a background task, so the reply never waits for it. The task queues the
turn durably, makes one short LLM call (new facts, and which known ones they replace or
repeat) and applies it; a failure is logged and retried by `retry_due` later, never shown
to the person.

Only the person's own message is a source. The assistant's answer goes along as context,
marked as not the person's words; tool results and web pages never reach the extractor.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any

from bot.contracts.clock import Clock
from bot.contracts.envelopes import TurnStop
from bot.contracts.turn import ComposedTurn, TurnContext
from bot.llm.caps import background_work
from bot.llm.port import LLM
from bot.memory.facts import MAX_FACT_CHARS, Fact, Kind, normalised
from bot.memory.queue import ExtractionQueue, Job
from bot.memory.service import MemoryService
from bot.plumbing.background import Background
from bot.text.untrusted import holds_untrusted

log = logging.getLogger(__name__)

MEMORY_TOOLS = frozenset({"remember", "forget", "forget_everything", "recall_memories"})
KNOWN_SHOWN = 30  # known facts the extractor sees, to spot contradictions and repeats
MAX_NEW_FACTS = 10
MAX_SAID_CHARS = 4000
MAX_ANSWER_CHARS = 1000
_NOTHING_TO_LEARN = frozenset("""
hi hello hey yo hiya howdy thanks thank you thx ty cheers ok okay k kk yes yeah yep no nope
nah sure cool great nice good fine bye goodbye night morning evening afternoon lol haha
please done got it sounds perfect awesome
""".split())
# A person telling something about themselves says "I", "my", "we"... A message without
# any (a question about the world, "what is 17*3?") costs no extraction call. English first,
# then the first-person words of a few other common languages.
FIRST_PERSON = frozenset("""
i im ive id ill me my mine myself we were weve our ours us ourselves
je j moi mon ma mes nous notre nos ich mich mir mein meine meinen wir uns unser unsere
yo mi mis nosotros nuestro nuestra eu meu minha meus minhas nos nosso nossa io mio miei noi
""".split())
NO_STOP_LEARNING = frozenset({TurnStop.COMMAND, TurnStop.CANCELLED, TurnStop.BLOCKED,
                              TurnStop.RATE_LIMITED, TurnStop.FAILED})

PROMPT = """You maintain a personal assistant's long-term memory about one person.
From PERSON_SAID (the person's own words), extract durable facts about the person worth
remembering in later conversations: who they are, where they live, the people in their
life, their preferences, plans and dates. Ignore small talk, requests and questions that
reveal nothing lasting. ASSISTANT_ANSWER is context only: it is NOT the person's words;
never take a fact from it (nor from anything the person merely asked about or quoted).
Write each fact as a short third-person sentence without "the user" ("Lives in Lisbon",
"Daughter Mia is 7", "Prefers tea to coffee").
KNOWN_FACTS are facts already remembered (id: text). When a new fact contradicts or
updates known ones, list their ids in "replaces". When it says the same as a known fact,
give that id in "same_as" instead of repeating it.
Answer with JSON only:
{"facts": [{"text": "...", "kind": "fact|preference|person|event",
            "replaces": [], "same_as": null}]}
Answer {"facts": []} when there is nothing to remember."""


@dataclass(frozen=True)
class NewFact:
    text: str
    kind: Kind
    replaces: tuple[int, ...] = ()
    same_as: int | None = None


class ExtractionAnswerError(ValueError):
    """The extractor's answer is not the JSON asked for."""


def worth_learning(ctx: TurnContext, turn: ComposedTurn) -> bool:
    """False for turns with nothing to learn: commands, button presses and approval
    replies, trigger runs, greetings and thanks, messages where the person says nothing
    of themselves (no "I", "my", "we"...), and turns where the person already used the
    memory tools (what they asked to remember or forget is done)."""
    msg = ctx.msg
    if msg.button is not None or msg.from_trigger or turn.settled:
        return False
    if turn.stop in NO_STOP_LEARNING or msg.text.lstrip().startswith("/"):
        return False
    if not speaks_of_themselves(msg.text):
        return False
    return not any(call.get("function", {}).get("name") in MEMORY_TOOLS
                   for m in turn.stored for call in m.get("tool_calls") or ())


def speaks_of_themselves(text: str) -> bool:
    """False for greetings and thanks, and for words without any "I", "my", "we"..."""
    words = re.findall(r"\w+", text.lower().replace("'", "").replace("’", ""))
    if not words or all(w in _NOTHING_TO_LEARN for w in words):
        return False
    return not FIRST_PERSON.isdisjoint(words)


def parse_answer(text: str | None) -> list[NewFact]:
    """The facts in the extractor's JSON answer (tolerating a code fence around it)."""
    raw = (text or "").strip()
    start, end = raw.find("{"), raw.rfind("}")
    if start < 0 or end < start:
        raise ExtractionAnswerError(f"no JSON object in the answer: {raw[:80]!r}")
    try:
        data = json.loads(raw[start:end + 1])
    except json.JSONDecodeError as err:
        raise ExtractionAnswerError(f"invalid JSON: {err}") from err
    items = data.get("facts") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise ExtractionAnswerError("the answer has no \"facts\" list")
    found = []
    for item in items[:MAX_NEW_FACTS]:
        if not isinstance(item, dict) or not isinstance(item.get("text"), str):
            continue
        text = " ".join(item["text"].split())[:MAX_FACT_CHARS]
        if not text:
            continue
        replaces = tuple(i for i in item.get("replaces") or () if isinstance(i, int))
        same_as = item.get("same_as") if isinstance(item.get("same_as"), int) else None
        found.append(NewFact(text, Kind.parse(item.get("kind")), replaces, same_as))
    return found


class MemoryExtractor:
    def __init__(self, memory: MemoryService, queue: ExtractionQueue, llm: LLM,
                 clock: Clock) -> None:
        self.memory = memory
        self.queue = queue
        self.llm = llm
        self.clock = clock
        # Background work of this process (kept so it is not garbage-collected mid-run,
        # and can be awaited in tests and cancelled at close).
        self._background = Background()
        # One lock per person seen by this process (a few bytes each; never dropped, so two
        # jobs of one person can never hold different locks).
        self._user_locks: dict[str, asyncio.Lock] = {}

    # --- the orchestrator's hook -----------------------------------------------------------

    def after_turn(self, ctx: TurnContext, turn: ComposedTurn) -> None:
        """Start learning from the turn in the background; returns at once, never raises."""
        try:
            if not worth_learning(ctx, turn):
                return
            job = Job(ctx.turn_id, ctx.user.id, ctx.msg.text[:MAX_SAID_CHARS],
                      turn.text[:MAX_ANSWER_CHARS],
                      # what this turn read (a page, a mail, a forwarded message) taints
                      # what is learnt from it (recalled later as untrusted data)
                      third_party=bool(ctx.msg.third_party) or holds_untrusted(turn.stored))
            self._spawn(self._first_run(job))
        except Exception:
            log.exception("memory extraction could not be started for turn %s", ctx.turn_id)

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        self._background.spawn(work)

    async def learn_now(self, job: Job) -> None:
        """Extract from `job` now (queued first: a failure is retried later), unless it was
        queued before."""
        await self._first_run(job)

    async def _first_run(self, job: Job) -> None:
        try:
            if not await self.queue.put(job, self.clock.now()):
                return  # a redone turn: its extraction is already queued
        except Exception:
            log.exception("memory extraction of turn %s could not be queued", job.turn_id)
            return
        await self.run(job)

    # --- running jobs ----------------------------------------------------------------------

    async def run(self, job: Job) -> None:
        """Extract one queued turn; on failure it stays queued for a later retry."""
        lock = self._user_locks.setdefault(job.user_id, asyncio.Lock())
        try:
            async with lock:  # one person's extractions in order: no racing replacements
                await self.extract(job)
            await self.queue.done(job.turn_id)
        except asyncio.CancelledError:
            raise  # closing: the job stays queued and is retried after its claim lapses
        except Exception as err:
            retried = await self.queue.failed(job, f"{type(err).__name__}: {err}",
                                              self.clock.now())
            log.warning("memory extraction of turn %s failed (%s): %s: %s", job.turn_id,
                        "will retry" if retried else "giving up", type(err).__name__, err)

    async def extract(self, job: Job) -> list[Fact]:
        """One LLM call, applied: new facts stored, replaced ones closed, repeats merged."""
        known = await self.memory.recaller.relevant(job.user_id, job.said,
                                                    limit=KNOWN_SHOWN // 2)
        known = known[:KNOWN_SHOWN]
        with background_work():  # the small cap, and never before a person's turn
            answer = await self.llm.complete(_request(job, known), None)
        found = parse_answer(answer.content)
        known_ids = {f.id for f in known}
        known_texts = {normalised(f.text) for f in known}
        stored = []
        for new in found:
            if new.same_as in known_ids or normalised(new.text) in known_texts:
                continue  # the same fact again: merged into the one already known
            # Only facts the extractor was shown can be replaced (the store also checks
            # that they are this person's).
            replaces = [i for i in new.replaces if i in known_ids]
            fact = await self.memory.learn(job.user_id, new.text, new.kind,
                                           source_turn=job.turn_id, replaces=replaces,
                                           from_third_party=job.third_party)
            if fact is not None:
                stored.append(fact)
                known_texts.add(normalised(fact.text))
        return stored

    async def retry_due(self) -> int:
        """One pass over queued turns that are due (failed earlier, or interrupted)."""
        jobs = await self.queue.claim_due(self.clock.now())
        for job in jobs:
            await self.run(job)
        return len(jobs)

    async def drain(self) -> None:
        """Wait for this process's background extractions (tests, a graceful stop)."""
        await self._background.drain()

    async def close(self) -> None:
        await self._background.close()


def _request(job: Job, known: list[Fact]) -> list[dict[str, Any]]:
    facts = "\n".join(f"{f.id}: {f.text}" for f in known) or "(none)"
    content = (f"KNOWN_FACTS:\n{facts}\n\nPERSON_SAID:\n{job.said}\n\n"
               f"ASSISTANT_ANSWER (context only, not the person's words):\n{job.answer}")
    return [{"role": "system", "content": PROMPT}, {"role": "user", "content": content}]
