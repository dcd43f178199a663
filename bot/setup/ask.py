"""How `valet onboard` asks: in a terminal with the chat's line editor (prompt_toolkit:
editing, a default shown in brackets, secrets without echo), or from flags for scripts
(`--yes`: every answer is a flag, the environment, what the configuration already says, or
the default; a missing one stops with one line naming its flag).

A step gives each answer a check; in a terminal a refused answer is asked again, and any
question may be answered "skip" (leave this step out: nothing of it changes) or "back" (this
step again from its start, or the step before from its first question); Ctrl-C or Ctrl-D
stops (bot.cli.onboard.flow keeps the steps already confirmed). From flags a refused answer
stops the wizard: nothing is written."""

from __future__ import annotations

import inspect
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

# A check says what is wrong with an answer (None: fine); it may look something up.
Check = Callable[[str], "str | Awaitable[str | None] | None"]


class OnboardStop(Exception):
    """The wizard cannot go on; one line saying why and what to do (nothing is written)."""


class Navigate(Exception):  # not an error: where the person wants to go
    """The person answered a question with a word that moves between steps."""


class SkipStep(Navigate):
    """"skip": leave this step out (nothing of it changes)."""


class GoBack(Navigate):
    """"back": this step again from its start, or the one before."""


class Interrupted(Exception):
    """Ctrl-C or Ctrl-D at a question: stop, keeping the steps already confirmed."""


SKIP, BACK = "skip", "back"
NAVIGATION_HINT = ("(at any question: skip leaves the step out, back goes back; Ctrl-C stops "
                   "and keeps the steps you confirmed)")


@dataclass(frozen=True)
class Question:
    text: str  # "LLM endpoint (an OpenAI-compatible base URL)"
    flag: str  # "--llm-base-url", named when a script left it out
    default: str | None = None  # shown in brackets; Enter takes it
    given: str | None = None  # from a flag or the environment: not asked
    secret: bool = False  # asked without echo; the default is never shown
    required: bool = True  # "" is not an answer


class Questions(Protocol):
    interactive: bool
    asked: int  # questions answered in the current step (the flow resets it)

    def say(self, text: str) -> None: ...

    async def answer(self, question: Question, check: Check | None = None) -> str: ...

    async def confirm(self, text: str, default: bool) -> bool: ...


async def _problem(check: Check | None, value: str) -> str | None:
    if check is None:
        return None
    found = check(value)
    return await found if inspect.isawaitable(found) else found


class Scripted:
    """--yes: nothing is asked."""

    interactive = False

    def __init__(self, say: Callable[[str], None] = print) -> None:
        self._say = say
        self.asked = 0

    def say(self, text: str) -> None:
        self._say(text)

    async def answer(self, question: Question, check: Check | None = None) -> str:
        value = question.given if question.given is not None else question.default
        if value is None or (question.required and not value.strip()):
            raise OnboardStop(f"{question.text}: give {question.flag}")
        value = value.strip()
        if value or question.required:
            problem = await _problem(check, value)
            if problem:
                raise OnboardStop(problem)
        return value

    async def confirm(self, text: str, default: bool) -> bool:
        return default


class Interactive:
    """A person at the terminal."""

    interactive = True

    def __init__(self) -> None:
        from prompt_toolkit import PromptSession

        self._session: PromptSession[str] = PromptSession()
        self.asked = 0

    def say(self, text: str) -> None:
        print(text, flush=True)

    async def _read(self, prompt: str, *, secret: bool) -> str:
        try:
            value = (await self._session.prompt_async(prompt, is_password=secret)).strip()
        except (EOFError, KeyboardInterrupt):
            raise Interrupted() from None
        if value == SKIP:
            raise SkipStep()
        if value == BACK:
            raise GoBack()
        return value

    async def answer(self, question: Question, check: Check | None = None) -> str:
        if question.given is not None:
            problem = await _problem(check, question.given)
            if problem:
                raise OnboardStop(f"{question.flag}: {problem}")
            return question.given
        shown = ""
        if question.default and not question.secret:
            shown = f" [{question.default}]"
        elif question.default:
            shown = " [Enter keeps the current one]"
        while True:  # never a dead end: skip, back and Ctrl-C are always there
            value = await self._read(f"{question.text}{shown}: ", secret=question.secret)
            value = value or (question.default or "")
            if question.required and not value:
                print(f"  (an answer is needed here; or {SKIP} / {BACK})")
                continue
            problem = await _problem(check, value) if value else None
            if not problem:
                self.asked += 1
                return value
            print(f"  {problem}\n  (try again; or {SKIP} / {BACK})")

    async def confirm(self, text: str, default: bool) -> bool:
        hint = "Y/n" if default else "y/N"
        value = (await self._read(f"{text} [{hint}] ", secret=False)).lower()
        self.asked += 1
        return default if not value else value.startswith("y")


def questions(yes: bool) -> Questions:
    if yes:
        return Scripted()
    if not sys.stdin.isatty():
        raise OnboardStop("valet onboard asks questions: run it in a terminal, or give --yes "
                          "and the answers as flags (valet onboard --help)")
    return Interactive()
