"""What `valet doctor` prints: one line per check, each check on its own (`guarded`), FAIL
lines counted; nothing it prints carries a secret. The doctor's checks and each channel's
(channels/<name>/doctor.py) write to it."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field

from bot.channel import MenuCommand
from bot.plumbing.logs import mask, secret_values
from bot.text.redact import redact_text

log = logging.getLogger(__name__)

Say = Callable[[str], None]
# The command table's menu for a channel (built only when a --fix needs it).
MenuSource = Callable[[], Awaitable[Sequence[MenuCommand]]]


@dataclass
class Report:
    """What doctor prints: one line per check, FAIL lines counted (exit 1 when any). No line
    carries a secret: URL credentials and the values of the environment's secret variables
    are masked."""

    say: Say
    fix: bool = False
    problems: int = 0
    fixed: list[str] = field(default_factory=list)
    secrets: list[str] = field(default_factory=list)  # values masked in every line

    @classmethod
    def of(cls, say: Say, env: Mapping[str, str], *, fix: bool = False) -> Report:
        return cls(say, fix=fix, secrets=secret_values(env))

    def _line(self, tag: str, text: str) -> None:
        self.say(f"{tag}{mask(redact_text(text), self.secrets)}")

    def ok(self, text: str) -> None:
        self._line("  ok    ", text)

    def bad(self, text: str) -> None:
        self.problems += 1
        self._line("  FAIL  ", text)

    def off(self, text: str) -> None:
        self._line("  off   ", text)

    def on(self, text: str) -> None:
        self._line("  on    ", text)

    def note(self, text: str) -> None:
        self._line("  note  ", text)

    def did(self, text: str) -> None:
        self.fixed.append(text)
        self._line("  fixed ", text)

    async def guarded(self, name: str, check: Callable[[], object]) -> bool:
        """Run one check so that nothing it raises stops the others: an exception is a FAIL
        line naming the check and the error (counted like any problem). True when it ran to
        its end."""
        try:
            result = check()
            if inspect.isawaitable(result):
                await result
        except Exception as err:
            log.debug("doctor: the %s check failed", name, exc_info=True)
            self.bad(f"{name}: the check could not finish: {type(err).__name__}: "
                     f"{str(err)[:300] or 'no detail'}")
            return False
        return True
