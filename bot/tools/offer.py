"""The tools a conversation is offered stay offered: each request carries every tool offered
before in the conversation, in the order first offered, and any new ones after them. Servers
render the tools near the start of the prompt (llama.cpp puts them in the system block), so
a set that changed from turn to turn (the capability router opening one, a capability
closing again after a few turns) made the server read the whole history again every turn;
an append-only set keeps its prompt cache. A conversation starts again (an empty set) when
its summary changes: the prompt's prefix changes then anyway."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

Schema = dict[str, Any]


def schema_name(schema: Schema) -> str:
    function = schema.get("function")
    return str(function.get("name")) if isinstance(function, dict) else ""


@dataclass
class _Offer:
    epoch: str
    schemas: dict[str, Schema] = field(default_factory=dict)


class StableOffers:
    """Per conversation (a person, until their summary changes): the tools offered so far.
    Only the most recently active `keep_conversations` are remembered."""

    def __init__(self, keep_conversations: int = 2_000) -> None:
        self.keep_conversations = keep_conversations
        self._offers: OrderedDict[str, _Offer] = OrderedDict()

    def offer(self, conversation: str, epoch: str, wanted: list[Schema]) -> list[Schema]:
        """What a request offers when it wants `wanted`: the conversation's tools so far (a
        tool's schema as it is now, where it is still wanted), then the new ones."""
        offer = self._offers.get(conversation)
        if offer is None or offer.epoch != epoch:
            offer = _Offer(epoch)
        now = {schema_name(s): s for s in wanted}
        merged = {name: now.get(name, old) for name, old in offer.schemas.items()}
        merged.update((name, s) for name, s in now.items() if name not in merged)
        offer.schemas = merged
        self._offers[conversation] = offer
        self._offers.move_to_end(conversation)
        while len(self._offers) > self.keep_conversations:
            self._offers.popitem(last=False)
        return list(merged.values())

    def current(self, conversation: str, epoch: str) -> list[Schema]:
        """The tools the conversation was offered so far, as last offered (none: [])."""
        offer = self._offers.get(conversation)
        return list(offer.schemas.values()) if offer and offer.epoch == epoch else []

    def offered(self, conversation: str, epoch: str) -> frozenset[str]:
        """The names of the tools the conversation was offered so far."""
        offer = self._offers.get(conversation)
        return frozenset(offer.schemas) if offer and offer.epoch == epoch else frozenset()
