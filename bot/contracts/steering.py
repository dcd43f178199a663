"""Mid-turn messages as the turn sees them: `Steered` (a message that joined a running turn)
and `Steering` (the running turn's side of the mailbox; the gateway feeds it, bot.gateway.midturn;
the loop takes from it, bot.loop.steering)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class Steered:
    """A message added to a running turn: its inbox row, and what the person wrote."""

    row_id: int
    text: str

    def to_json(self) -> dict[str, Any]:
        return {"row_id": self.row_id, "text": self.text}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Steered:
        return cls(int(data["row_id"]), str(data["text"]))


class Steering(Protocol):
    """A running turn's side of the mid-turn queue."""

    def take(self) -> list[Steered]:
        """What arrived for this turn since the last take, in arrival order (removed)."""
        ...

    async def consumed(self, items: list[Steered]) -> None:
        """These are part of the turn now (its journal says so): their inbox rows are closed
        as consumed by it. Called again on a redo: a row already closed stays closed."""
        ...
