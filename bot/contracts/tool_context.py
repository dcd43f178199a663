"""What one tool call may use (`ToolExecutionContext`): the person, their time zone, the clock,
the shared HTTP client, the tool's settings, and `services`, what the composition root hands to
tools (agents.services.Services), carried here without the core looking inside."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import aiohttp

from bot.contracts.clock import Clock, SystemClock
from bot.contracts.subtask_allowance import SubtaskAllowance


@dataclass(frozen=True)
class ToolExecutionContext:
    """Everything one call may use. Built per call, never stored on a tool."""

    user_id: str
    timezone: str = "UTC"
    clock: Clock = field(default_factory=SystemClock)
    http: aiohttp.ClientSession | None = None  # shared by the app's tools
    settings: Mapping[str, Any] = field(default_factory=dict)
    channel: str = ""
    call_id: str = ""
    # The message key of the triggered run this turn answers (None: a person wrote).
    triggered_by: str | None = None
    turn_id: str = ""  # the turn this call belongs to (a sub-task's journal hangs off it)
    # Text a third party wrote (a page, a mail, an event) is in this request's context: tools
    # that change how Valet reaches the person or set up lasting work ask first (the loop sets
    # it each round; bot.text.untrusted).
    untrusted_context: bool = False
    # What the composition root hands to tools (agents.services.Services): the core carries
    # it without looking inside; a tool reads it typed with agents.services.services_of.
    services: object = None
    # This call runs a request the person approved (set by the approval flow, nowhere else):
    # a tool that must never act unasked (sending mail) checks it as defence in depth.
    approved: bool = False
    # What the turn may still spend on sub-tasks (bot.contracts.subtask_allowance); one per turn.
    allowance: SubtaskAllowance | None = None

    @property
    def tz(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)

    def now(self) -> datetime:
        """Now, in the user's timezone (never the server's)."""
        return self.clock.now().astimezone(self.tz)

    def session(self) -> aiohttp.ClientSession:
        """The app's shared HTTP client; RuntimeError (a tool error) where there is none."""
        if self.http is None:
            raise RuntimeError("web access is not available here")
        return self.http

    def for_call(self, call_id: str, settings: Mapping[str, Any] | None = None
                 ) -> ToolExecutionContext:
        return replace(self, call_id=call_id,
                       settings=settings if settings is not None else self.settings)
