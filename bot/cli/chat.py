"""`valet chat`: the app with the console channel, in pipe mode or with a person at the
terminal. Beside a running `valet serve` it attaches to the server instead (its turns run
there; the database is the server's alone), on SQLite or Postgres alike."""

from __future__ import annotations

import logging
import sys
from typing import Any

from bot.config import Settings
from bot.plumbing.startup import started
from bot.text.redact import install_redaction
from bot.tools.registry import approval_gated
from channels.console.channel import ConsoleChat, pipe_channel
from channels.console.link import Endpoint, endpoint_file, read_endpoint


async def run_chat(settings: Settings, *, pipe: bool, jsonl: bool) -> int:
    from bot.app import NO_LLM_MESSAGE, App

    endpoint = read_endpoint(endpoint_file(settings.data_dir()))
    if endpoint is not None:
        attached = await _beside_the_server(settings, endpoint, pipe=pipe, jsonl=jsonl)
        if attached is not None:
            return attached
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
            started()
            return await ConsoleChat(app.gateway, channel, now=app.clock.now).run_pipe(sys.stdin)
        finally:
            logging.getLogger().removeHandler(notes)
            await app.close()

    from channels.console.tty import InteractiveChat, tty_channel

    channel, screen = tty_channel(needs_approval, app.persona.lines)
    notes = _chat_notes(screen.note)
    app.add_channel(channel)
    try:
        await app.start()
        started()
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


async def _beside_the_server(settings: Settings, endpoint: Endpoint, *, pipe: bool,
                             jsonl: bool) -> int | None:
    """The chat on the running server's terminal endpoint; None when no server answers."""
    from channels.console.remote import RemoteChat, RemoteTerminal, ServerGone
    from channels.registry import specs
    from persona import load_persona

    # The channels' groups too: a persona that rewords a channel's line loads here as well.
    lines = load_persona(settings.persona,
                         line_groups=specs(settings).line_groups()).lines
    if pipe:  # the server leaves approval-gated tools out of the progress it sends
        channel = pipe_channel(jsonl, lambda name: False, lines)
        screen: Any = channel.screen
    else:
        from channels.console.tty import tty_channel

        channel, screen = tty_channel(lambda name: False, lines)
    terminal = await RemoteTerminal.attach(endpoint, channel)
    if terminal is None:
        return None
    chat = RemoteChat(terminal)
    try:
        if pipe:
            return await chat.run_pipe(sys.stdin)
        from channels.console.tty import InteractiveChat

        return await InteractiveChat(chat, screen, settings.data_dir() / "chat_history").run(
            f"Valet beside the running valet serve (pid {endpoint.pid}): the turns run there.\n"
            f"Data: {settings.data_dir()} (the server's log: valet logs)\n"
            "/help lists the commands; Ctrl-C stops a reply; Ctrl-D leaves.")
    except ServerGone:
        print("valet: valet serve stopped; the chat ends here", file=sys.stderr)
        return 1
    finally:
        await terminal.close()


def _streaming(settings: Settings) -> Settings:
    """A person at the terminal sees the reply as it is written, unless valet.yaml says
    otherwise (`loop.stream: false`)."""
    loop: Any = settings.loop
    current = loop if isinstance(loop, dict) else loop.model_dump(exclude_unset=True)
    if "stream" in current:
        return settings
    return settings.model_copy(update={"loop": {**current, "stream": True}})


def _chat_notes(note: Any) -> logging.Handler:
    from channels.console.notes import ChatNotes

    handler = ChatNotes(note)
    logging.getLogger().addHandler(handler)
    install_redaction()  # the notes too: URL credentials never reach the screen
    return handler
