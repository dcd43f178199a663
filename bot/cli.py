"""The `valet` command (also `python -m bot`)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Awaitable, Callable

from bot.admin_cli import add_admin_commands, run_admin
from bot.config import ConfigError, Settings, load_settings
from bot.db import DatabaseUnavailable, DatabaseURLError, as_unavailable
from bot.redact import install_redaction, redact_text
from bot.redis_service import RedisUnavailable

EXIT_CONFIG = 2


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="valet", description="Valet, a personal assistant.")
    p.add_argument("--config", help="path to valet.yaml (default: $VALET_CONFIG, ./valet.yaml)")
    sub = p.add_subparsers(dest="command", required=True)
    chat = sub.add_parser("chat", help="chat in the terminal (pipe mode when stdin is not a tty)")
    chat.add_argument("--pipe", action="store_true", help="one message per line, replies on stdout")
    chat.add_argument("--jsonl", action="store_true", help="pipe mode, replies as JSON lines")
    sub.add_parser("doctor", help="check the configuration and the LLM endpoint")
    sub.add_parser("serve", help="run the service: channels (Telegram), webhooks, health checks")
    add_admin_commands(sub)
    from triggers.cli import add_task_commands  # issue 14

    add_task_commands(sub)
    from bot.memory.cli import add_memory_commands  # issue 15

    add_memory_commands(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        settings = load_settings(args.config)
    except ConfigError as err:
        return _stop(err)
    logging.basicConfig(level=settings.log_level, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    install_redaction()  # every library's log lines too: URL credentials never reach a log
    commands: dict[str, Callable[[Settings, argparse.Namespace], Awaitable[int]]] = {
        "chat": _chat, "doctor": _doctor, "serve": _serve, "users": run_admin,
        "pair": run_admin, "approvals": run_admin, "tasks": _tasks,
        "memory": _memory}
    try:
        return asyncio.run(commands[args.command](settings, args))
    except (ConfigError, DatabaseUnavailable, DatabaseURLError, RedisUnavailable) as err:
        return _stop(err)
    except KeyboardInterrupt:
        return 130
    except Exception as err:
        # The database failing while running (disk full, server gone): one line, not a
        # traceback. Messages already acknowledged stay in the inbox for the next start.
        failure = as_unavailable(err, settings.database_url)
        if failure is None:
            raise
        return _stop(failure)


def _stop(err: Exception) -> int:
    """An operator's problem, one line each, and the exit status that says so."""
    for line in str(err).splitlines() or [type(err).__name__]:
        print(f"valet: {redact_text(line)}", file=sys.stderr)
    return EXIT_CONFIG


async def _chat(settings: Settings, args: argparse.Namespace) -> int:
    from bot.app import NO_LLM_MESSAGE, App
    from channels.console import ConsoleChat, stdout_channel

    if not settings.llm.configured:
        print(f"valet: {NO_LLM_MESSAGE}", file=sys.stderr)
        return EXIT_CONFIG
    app = await App.build(settings)
    pipe = args.pipe or args.jsonl or not sys.stdin.isatty()
    app.add_channel(stdout_channel(jsonl=args.jsonl, interactive=not pipe))
    try:
        await app.start()
        chat = ConsoleChat(app.gateway, now=app.clock.now)
        if pipe:
            return await chat.run_pipe(sys.stdin)
        return await chat.run_interactive(
            f"Valet ({app.persona.name}) on {settings.llm.model} — "
            f"{settings.llm.base_url or 'OpenAI'}. /quit to leave.")
    finally:
        await app.close()


async def _tasks(settings: Settings, args: argparse.Namespace) -> int:
    from triggers.cli import run_tasks  # issue 14

    return await run_tasks(settings, args)


async def _memory(settings: Settings, args: argparse.Namespace) -> int:
    from bot.memory.cli import run_memory  # issue 15

    return await run_memory(settings, args)


async def _serve(settings: Settings, args: argparse.Namespace) -> int:
    from bot.serve import serve

    return await serve(settings)


async def _doctor(settings: Settings, args: argparse.Namespace) -> int:
    from bot.doctor import run_doctor

    return await run_doctor(settings, print)
