"""Step 1 of handle_message: a task waiting for this user (bot.tasks.pool) gets the message first.

- "cancel", "never mind", "/cancel" (alone) cancel the most recently asked task.
- The reply answers a waiting question -> the task resumes. Finished: its result joins the
  turn as a fresh tool call + result (new ids; the original call already got its "waiting"
  result) and the loop decides what follows. Still waiting: its next question is the reply,
  without the loop.
- Anything else is not swallowed: it goes through the normal loop, and the waiting tasks are
  listed in the system context so the LLM can mention them.

Whether a reply answers a question is decided by the field's own checks when it has any (type,
validator, clean_ hook). A plain-text field accepts anything, and a reply that fails a check may
be a bad attempt or a new request; there one short LLM call decides (see `_which_question`). A
heuristic alone would have to guess whether "buy milk" is the note's text or a new request, and
guessing wrong swallows the user's message, the one thing this step must never do.
"""

from __future__ import annotations

import logging
import re
import uuid
from dataclasses import replace
from datetime import datetime

from bot.contracts.approvals import ApprovalDraft
from bot.contracts.envelopes import TurnStop
from bot.contracts.pause import PausedTask
from bot.contracts.tool_context import ToolExecutionContext
from bot.contracts.turn import Answered, Continue, Joined, StepResult, TurnContext, merge
from bot.llm.port import LLM, LLMError
from bot.loop.journal import TurnJournal
from bot.tasks.model import Fit, PoolNotice, TaskHandler, Verdict
from bot.tasks.pool import HOLDING, AgentPool
from bot.tools.registry import ToolStatus
from persona.catalog import said_label
from persona.lines import TaskLines, fill

log = logging.getLogger(__name__)

CANCEL_WORDS = frozenset({"cancel", "/cancel", "never mind", "nevermind", "nvm", "forget it",
                          "cancel that", "cancel it"})


def notice_line(lines: TaskLines, notice: PoolNotice) -> str:
    """What the person reads of a task the pool let go ({task}, {question}, {limit})."""
    template = {"expired": lines.task_expired, "dropped": lines.task_dropped,
                "evicted": lines.task_evicted}[notice.reason]
    return fill(template, task=said_label(notice.task.label), question=notice.task.question,
                limit=notice.detail)


def is_cancel(text: str) -> bool:
    return " ".join(text.lower().strip(" \t\n.!").split()) in CANCEL_WORDS


_NEW_REQUEST = re.compile(
    r"(what|when|where|who|whose|why|how|which|can|could|would|will|should|is|are|do|does|"
    r"did|please|hey|hi|hello|thanks|thank you|tell me|show me|remind me|find|search|look up|"
    r"check|send|set|add|list)\b", re.IGNORECASE)


def looks_unrelated(text: str) -> bool:
    """The fallback when the classifier cannot be asked: questions and requests are not
    answers."""
    text = text.strip()
    return text.endswith("?") or bool(_NEW_REQUEST.match(text))


CLASSIFIER_PROMPT = (
    "You decide whether a chat message answers a question the assistant asked. "
    "Reply with one number and nothing else.")


class Resumer:
    def __init__(self, pool: AgentPool, handler: TaskHandler, llm: LLM, *,
                 lines: TaskLines, answer_check: str = "llm",
                 journal: TurnJournal | None = None) -> None:
        self.pool = pool
        self.handler = handler
        self.llm = llm
        self.lines = lines
        self.answer_check = answer_check
        # A turn redone after a crash reuses what resuming a task did (an agent that ran is
        # never run again): bot.loop.journal, like the loop's tool calls.
        self.journal = journal

    # --- before the loop ----------------------------------------------------------------------

    name = "tasks"
    reads = HOLDING.name  # the person's waiting tasks

    async def before(self, ctx: TurnContext) -> StepResult:
        """Step: a waiting task gets the message first. Answered when the turn ends here (a
        question again, a cancellation); Continue when the loop runs (maybe with a finished
        task's result joined to the turn). Expired or dropped tasks become notices."""
        if ctx.msg.from_trigger or ctx.msg.button is not None:
            return Continue()  # a trigger's text or a button press answers no question
        redone = await self._from_journal(ctx)
        if redone is not None:
            return redone
        live, notices = await self._live_tasks(ctx)
        said = Continue(notices=tuple(notices))
        if not live:
            return said
        text = (ctx.msg.text or "").strip()
        if is_cancel(text):
            waiting = live[0]
            if await self.pool.take(waiting):
                log.info("user %s cancelled %s %s", waiting.user_id, waiting.name, waiting.id)
                return merge(said, Answered(text=fill(self.lines.task_cancelled,
                                                      task=said_label(waiting.label),
                                                      question=waiting.question),
                                            stop=TurnStop.CANCELLED))
            return said
        task, verdict = await self._match(live, text, ctx.tool_ctx)
        if task is None or verdict is None:
            return said
        if verdict.fit is Fit.INVALID:
            task.question = verdict.ask_again
            await self.pool.touch(task)
            return merge(said, Answered(text=verdict.ask_again, stop=TurnStop.WAITING_FOR_USER))
        if not await self.pool.take(task):
            return said
        return merge(said, await self._resume(ctx, task, text))

    async def cancel_latest(self, user_id: str) -> str | None:
        """/cancel: drop the task whose question was asked last; what to say, or None."""
        for task in await self.pool.waiting(user_id):
            if await self.pool.take(task):
                log.info("user %s cancelled %s %s", user_id, task.name, task.id)
                return fill(self.lines.task_cancelled, task=said_label(task.label),
                            question=task.question)
        return None

    async def _from_journal(self, ctx: TurnContext) -> StepResult | None:
        """This turn already resumed a task before a crash: reuse its outcome; if it started
        but never recorded one, the outcome is unknown and the LLM is told so."""
        if self.journal is None:
            return None
        done = await self.journal.recorded(ctx.turn_id, "tasks:done")
        if done is not None:
            joined = tuple(Joined(**j) for j in done["joined"])
            drafts = tuple(ApprovalDraft(**d) for d in done["drafts"])
            if done["answered"]:
                return Answered(joined=joined, drafts=drafts, text=done["text"],
                                stop=TurnStop(done["stop"]))
            return Continue(joined=joined, drafts=drafts)
        started = await self.journal.recorded(ctx.turn_id, "tasks:started")
        if started is None:
            return None
        return Continue(joined=(Joined(started["call_id"], started["name"], {}, (
            "Interrupted: this task was resumed before a restart and its outcome is unknown; "
            "check before trying again.")),))

    async def _resume(self, ctx: TurnContext, task: PausedTask, text: str) -> StepResult:
        call_id = f"call_resume_{uuid.uuid4().hex[:16]}"
        if self.journal is not None:
            await self.journal.record(ctx.turn_id, "tasks:started",
                                      {"call_id": call_id, "name": task.name})
        result = await self._answer(ctx, task, text, call_id)
        if self.journal is not None:
            await self.journal.record(ctx.turn_id, "tasks:done", {
                "joined": [vars(j) for j in result.joined],
                "drafts": [vars(d) for d in result.drafts],
                "answered": isinstance(result, Answered),
                "text": getattr(result, "text", ""),
                "stop": getattr(result, "stop", TurnStop.COMMAND).value})
        return result

    async def _answer(self, ctx: TurnContext, task: PausedTask, text: str, call_id: str
                      ) -> StepResult:
        resumed = await self.handler.answer(task, text, ctx.tool_ctx.for_call(call_id))
        outcome = resumed.outcome
        joined = Joined(call_id, task.name, resumed.arguments, outcome.content)
        if outcome.status is ToolStatus.WAITING and isinstance(outcome.pause, PausedTask):
            await self.pool.put_back(outcome.pause)
            return Answered(text=outcome.pause.question, stop=TurnStop.WAITING_FOR_USER)
        if outcome.status is ToolStatus.WAITING and isinstance(outcome.pause, ApprovalDraft):
            # Every field is in and the action needs the person's OK: the call joins the
            # turn with its "waiting" result, and the approval is shown.
            return Answered(joined=(joined,), drafts=(replace(outcome.pause, call_id=call_id),),
                            stop=TurnStop.WAITING_FOR_USER)
        if outcome.status is ToolStatus.DENIED:
            return Answered(text=outcome.content, stop=TurnStop.CANCELLED)
        return Continue(joined=(joined,))

    async def _live_tasks(self, ctx: TurnContext) -> tuple[list[PausedTask], list[str]]:
        notices = await self.pool.sweep(ctx.user.id)
        live = []
        for task in await self.pool.waiting(ctx.user.id):
            why = self.handler.check(task)
            if why is None:
                live.append(task)
            elif (notice := await self.pool.discard(task, why)) is not None:
                notices.append(notice)
        return live, [notice_line(self.lines, n) for n in notices]

    async def _match(self, live: list[PausedTask], text: str, ctx: ToolExecutionContext
                     ) -> tuple[PausedTask | None, Verdict | None]:
        if not text:
            return None, None
        verdicts = [(task, self.handler.verdict(task, text, ctx)) for task in live]
        if verdicts[0][1].fit is Fit.NEXT_MESSAGE:  # the latest question was asked by the LLM
            return verdicts[0]
        for task, verdict in verdicts:
            if verdict.fit is Fit.ANSWER:
                return task, verdict
        # An older ask_user question may still be answered, like any plain-text one.
        verdicts = [(t, Verdict(Fit.FREE) if v.fit is Fit.NEXT_MESSAGE else v)
                    for t, v in verdicts]
        open_ = [(t, v) for t, v in verdicts if v.fit in (Fit.FREE, Fit.INVALID)]
        if not open_:
            return None, None
        number = await self._which_question([t.question for t, _ in open_], text)
        return open_[number - 1] if number else (None, None)

    async def _which_question(self, questions: list[str], text: str) -> int:
        """Which question (1-based) the message answers, 0 for none. One short LLM call: the
        field checks could not decide. Falls back to `looks_unrelated` if the call fails."""
        fallback = 0 if looks_unrelated(text) else 1
        if self.answer_check != "llm":
            return fallback
        listed = "\n".join(f"{i}. “{q}”" for i, q in enumerate(questions, 1))
        prompt = (f"The assistant asked the user:\n{listed}\n\nThe user then wrote:\n"
                  f"<<<\n{text}\n>>>\n\nIf this message is the user's answer (even a short, "
                  "partial or badly formatted one) to one of the questions, reply with that "
                  "question's number. If it is something else (a new request, a question, "
                  "small talk), reply 0.")
        try:
            response = await self.llm.complete(
                [{"role": "system", "content": CLASSIFIER_PROMPT},
                 {"role": "user", "content": prompt}], None)
        except LLMError as err:
            log.warning("answer classifier failed (%s); using the heuristic", err)
            return fallback
        found = re.search(r"\d+", response.content or "")
        if found is None or int(found.group()) > len(questions):
            log.warning("answer classifier said %r; using the heuristic", response.content)
            return fallback
        return int(found.group())

    # --- after the loop -----------------------------------------------------------------------

    async def pause(self, ctx: TurnContext, tasks: list[PausedTask]) -> list[str]:
        """Store the tasks that paused this turn; returns what the person must hear about
        the pool (older tasks dropped to make room)."""
        if not tasks:
            return []
        notices = await self.pool.pause(ctx.user.id, tasks, turn_id=ctx.turn_id,
                                        limit_for=self.handler.limit_for)
        return [notice_line(self.lines, n) for n in notices]

    # --- the LLM's view -----------------------------------------------------------------------

    async def context_note(self, user_id: str) -> str | None:
        """The waiting tasks, for the system prompt."""
        tasks = await self.pool.waiting(user_id)
        if not tasks:
            return None
        now = self.pool.clock.now()
        listed = "\n".join(f"- {t.label} (task id {t.id}, {t.name}): asked “{t.question}” "
                           f"{_age(now, t.asked_at)} ago" for t in tasks)
        return ("Still waiting for the user's answer (their reply goes to these first when "
                f"it answers one):\n{listed}\nIf the user's message is about something else, "
                "help with that and briefly remind them of the open question; if they no "
                "longer want it, call cancel_task with its id.")


def _age(now: datetime, then: datetime | None) -> str:
    minutes = int((now - then).total_seconds() // 60) if then else 0
    if minutes < 60:
        return f"{max(minutes, 1)} min"
    if minutes < 48 * 60:
        return f"{minutes // 60} h"
    return f"{minutes // 1440} days"

