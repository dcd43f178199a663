"""`valet chat`: the app with the console channel, in pipe mode or with a person at the
terminal."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import Any

from bot.config import Settings
from bot.redact import install_redaction
from bot.tools import ToolRegistry
from channels.console import ConsoleChat, pipe_channel


async def run_chat(settings: Settings, *, pipe: bool, jsonl: bool) -> int:
    from bot.app import NO_LLM_MESSAGE, App

    if not settings.llm.configured:
        print(f"valet: {NO_LLM_MESSAGE}", file=sys.stderr)
        return 2
    if not pipe:
        settings = _streaming(settings)
    app = await App.build(settings)
    needs_approval = approval_gated(app.registry)

    if pipe:
        channel = pipe_channel(jsonl, needs_approval, app.persona.lines)
        notes = _chat_notes(channel.screen.note)
        app.add_channel(channel)
        try:
            await app.start()
            return await ConsoleChat(app.gateway, channel, now=app.clock.now).run_pipe(sys.stdin)
        finally:
            logging.getLogger().removeHandler(notes)
            await app.close()

    from channels.console_tty import InteractiveChat, tty_channel

    channel, screen = tty_channel(needs_approval, app.persona.lines)
    notes = _chat_notes(screen.note)
    app.add_channel(channel)
    try:
        await app.start()
        chat = ConsoleChat(app.gateway, channel, now=app.clock.now)
        await chat.finish_earlier_run()
        return await InteractiveChat(chat, screen, settings.data_dir() / "chat_history").run(
            f"Valet ({app.persona.name}) on {settings.llm.model} — "
            f"{settings.llm.base_url or 'OpenAI'}\n"
            f"Data: {settings.data_dir()} (log: {settings.log_file().name})\n"
            "/help lists the commands; Ctrl-C stops a reply; Ctrl-D leaves.")
    finally:
        logging.getLogger().removeHandler(notes)
        await app.close()


def approval_gated(registry: ToolRegistry) -> Callable[[str], bool]:
    """Tools whose every call waits for an approval first (agents ask later, themselves)."""
    def needs_approval(name: str) -> bool:
        tool = registry.get(name)
        return tool is not None and tool.requires_approval and not tool.is_agent

    return needs_approval


def _streaming(settings: Settings) -> Settings:
    """A person at the terminal sees the reply as it is written, unless valet.yaml says
    otherwise (`loop.stream: false`)."""
    loop: Any = settings.loop
    current = loop if isinstance(loop, dict) else loop.model_dump(exclude_unset=True)
    if "stream" in current:
        return settings
    return settings.model_copy(update={"loop": {**current, "stream": True}})


def _chat_notes(note: Any) -> logging.Handler:
    from channels.console_notes import ChatNotes

    handler = ChatNotes(note)
    logging.getLogger().addHandler(handler)
    install_redaction()  # the notes too: URL credentials never reach the screen
    return handler
