"""What a step of `valet onboard` reads and is (the wizard's order and its moving between
steps: bot.cli.onboard.flow). A channel's own step (channels/<name>/onboard.py) is one of
these, with its flags and what of it needs a public address."""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

from bot.config import Settings
from bot.setup.ask import Questions
from bot.setup.draft import Draft

Parser = argparse.ArgumentParser


@dataclass
class Context:
    """What every step reads: the answers given as flags, the settings as they are (the
    defaults when run again), the environment (secrets, and the test fakes' URLs)."""

    q: Questions
    args: argparse.Namespace
    settings: Settings
    env: Mapping[str, str]
    draft: Draft = field(default_factory=Draft)


@dataclass(frozen=True)
class Step:
    title: str  # "The LLM (any OpenAI-compatible endpoint)"
    run: Callable[[Context], Awaitable[None]]
    # What is set up already, in a few words (None: nothing yet); read from the settings and
    # the environment as they were when onboard started.
    current: Callable[[Context], str | None]
    # The step's own flags on `valet onboard` (--no-telegram...); None: it has none.
    flags: Callable[[Parser], None] | None = None
    # What of it needs a public https address as the draft and the environment now say ("SMS",
    # "the Telegram webhook"); None: nothing.
    public_url_for: Callable[[Context], str | None] | None = None
