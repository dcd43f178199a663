"""What one turn reads once, and what it knows is not there to read.

The gateway opens a scope around each turn it runs (`turn_scope`). Inside it:

- `read_once(key, load)`: a read whose answer holds for the whole turn goes to the database
  once (the person's row, wanted by the gateway, the orchestrator and the steps). A store that
  changes what it read calls `forget(key)`.
- holdings: which of the person's stores hold anything a turn reads (pending approvals,
  waiting tasks, a plan, remembered facts, prompt messages to settle), learnt with their row
  in the same statement (bot.people.users). A store asked for what it does not hold answers
  "nothing" without a statement (`may_hold`); a store that adds such a row says so
  (`now_holds`), so later reads in the turn look again.
- a first run: the turn never ran before (its inbox row was claimed for the first time), so
  its journal holds nothing to replay until the turn writes there (`journal_is_empty`).

Outside a scope (admin commands, background loops, a store called on its own) nothing is
cached and every read goes to the database. The scope is a context variable: tasks the turn
starts share it, and it is closed when the turn ends, so a task that outlives the turn (memory
extraction) reads the database again.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Holding:
    """A part of Valet that keeps rows per person that a turn reads, and the SQL condition on
    `$1` (the person's id) that is true whenever any of those reads could find something."""

    name: str
    exists: str  # "EXISTS (SELECT 1 FROM plans WHERE user_id = $1)"


@dataclass
class _Scope:
    turn_id: str
    first_run: bool
    reads: dict[Hashable, Any] = field(default_factory=dict)
    holdings: dict[str, set[str]] = field(default_factory=dict)  # user id -> parts held
    journalled: bool = False
    open: bool = True


_scope: ContextVar[_Scope | None] = ContextVar("valet_turn_reads", default=None)


@contextmanager
def turn_scope(turn_id: str, *, first_run: bool) -> Iterator[None]:
    """The turn `turn_id` runs inside; `first_run`: it never ran before."""
    scope = _Scope(turn_id, first_run)
    token = _scope.set(scope)
    try:
        yield
    finally:
        scope.open = False
        scope.reads.clear()
        _scope.reset(token)


def _current() -> _Scope | None:
    scope = _scope.get()
    return scope if scope is not None and scope.open else None


def in_turn() -> bool:
    return _current() is not None


async def read_once(key: Hashable, load: Callable[[], Awaitable[T]]) -> T:
    """`load()`'s answer, read once per turn (every time outside one)."""
    scope = _current()
    if scope is None:
        return await load()
    if key in scope.reads:
        return scope.reads[key]
    value = await load()
    if scope.open:
        scope.reads[key] = value
    return value


def forget(key: Hashable) -> None:
    scope = _current()
    if scope is not None:
        scope.reads.pop(key, None)


def learnt_holdings(user_id: str, held: Iterable[str]) -> None:
    """What the person's stores hold at the start of the turn (read with their row)."""
    scope = _current()
    if scope is not None:
        scope.holdings[user_id] = set(held)


def may_hold(user_id: str, part: str) -> bool:
    """False only when this turn knows the person's `part` holds nothing."""
    scope = _current()
    if scope is None or user_id not in scope.holdings:
        return True
    return part in scope.holdings[user_id]


def now_holds(user_id: str, part: str) -> None:
    """A row of `part` was added for the person: reads of it in this turn look again."""
    scope = _current()
    if scope is not None and user_id in scope.holdings:
        scope.holdings[user_id].add(part)


def _same_turn(scope: _Scope, turn_id: str) -> bool:
    # A sub-task's journal is keyed `<turn id>/<call id>`: it belongs to its turn.
    return turn_id == scope.turn_id or turn_id.startswith(f"{scope.turn_id}/")


def journal_is_empty(turn_id: str) -> bool:
    """True when the turn's journal is known to hold nothing: a first run that has not
    written to it yet."""
    scope = _current()
    return scope is not None and scope.first_run and not scope.journalled \
        and _same_turn(scope, turn_id)


def journal_written(turn_id: str) -> None:
    scope = _current()
    if scope is not None and _same_turn(scope, turn_id):
        scope.journalled = True
