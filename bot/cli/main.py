"""The `valet` command (also `python -m bot`).

Exit codes: 0 done; 1 a command found a problem (`doctor`), or what was asked for does not
exist (`users show nobody`); 2 a usage or configuration mistake (unknown option, invalid
value, bad valet.yaml, no LLM configured, database unreachable); 130 interrupted.
Bare `valet` prints the help and exits 0, as `gh` does.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import logging
import os
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from bot.config import ConfigError, Settings
from bot.config.env_file import EnvFileError, default_env_file, load_env_file
from bot.config.loading import config_path
from bot.config.secret_files import load_secret_files
from bot.db import DatabaseUnavailable, DatabaseURLError, as_unavailable
from bot.plumbing.redis import RedisUnavailable
from bot.text.redact import install_redaction, redact_text
from channels.registry import load_channel_settings

EXIT_CONFIG = 2
CONFIG_HELP = "path to valet.yaml (default: $VALET_CONFIG, else ./valet.yaml)"
ENV_FILE_HELP = ("file of KEY=value lines loaded before the settings; the environment wins "
                 "(default: valet.env beside valet.yaml)")


def valet_version() -> str:
    from importlib.metadata import PackageNotFoundError, version  # ~20 ms: only when asked

    try:
        return version("valet")
    except PackageNotFoundError:
        return "unknown"


class _Version(argparse.Action):
    """--version, looked up only when asked for (reading the package metadata is slow)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                  values: Any, option_string: str | None = None) -> None:
        print(f"valet {valet_version()}")
        parser.exit()


# The commands other modules register, by name: the module and its function that adds them
# (several commands may come from one). Only the one a command line names is imported, so a
# `valet chat` does not load Telegram's and Twilio's checks for `valet onboard`.
COMMANDS_FROM: dict[str, tuple[str, str]] = {
    **dict.fromkeys(("migrate", "backup", "logs"), ("bot.cli.ops", "add_ops_commands")),
    **dict.fromkeys(("users", "pair", "approvals"), ("bot.cli.admin", "add_admin_commands")),
    **dict.fromkeys(("connect", "credentials"), ("bot.cli.connect", "add_connect_commands")),
    "tasks": ("bot.cli.tasks", "add_task_commands"),
    "memory": ("bot.cli.memory", "add_memory_commands"),
    "mcp": ("bot.cli.mcp", "add_mcp_commands"),
    "outbox": ("bot.cli.outbox", "add_outbox_commands"),
    "onboard": ("bot.cli.onboard", "add_onboard_command"),
    "turns": ("bot.cli.turns", "add_turn_commands"),
    "console-link": ("bot.cli.console_link", "add_console_link_command"),
    "budget": ("bot.cli.budget", "add_budget_commands"),
    "service": ("bot.cli.service", "add_service_commands"),
}
_GLOBAL_WITH_VALUE = ("--config", "--env-file")


def parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The command line's parser: every command, or (given `argv` naming one) only what
    parsing that command line needs."""
    p = argparse.ArgumentParser(
        prog="valet", description="Valet, a personal assistant.",
        epilog="Global options (--config) may come before or after the command. "
               "`valet COMMAND --help` tells more.")
    p.add_argument("--version", action=_Version, nargs=0,
                   help="show program's version number and exit")
    p.add_argument("--config", help=CONFIG_HELP)
    p.add_argument("--env-file", help=ENV_FILE_HELP)
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    named = _command_in(argv)
    wanted = set(COMMANDS_FROM.values()) if named is None \
        else {COMMANDS_FROM[named]} if named in COMMANDS_FROM else set()
    if named is None or named in ("chat", "doctor", "serve"):
        _add_own_commands(sub)
    for module, function in sorted(set(COMMANDS_FROM.values()),
                                   key=list(COMMANDS_FROM.values()).index):
        if (module, function) in wanted:
            getattr(importlib.import_module(module), function)(sub)
    _everywhere(p)
    return p


def _command_in(argv: list[str] | None) -> str | None:
    """The command `argv` names, when it is one this module knows and help is not asked for
    before it; None: build every command (bare `valet`, `valet --help`, a typo)."""
    if argv is None:
        return None
    skip = False
    for word in argv:
        if skip:
            skip = False
        elif word in _GLOBAL_WITH_VALUE:
            skip = True
        elif word.startswith("-"):
            if word in ("-h", "--help", "--version"):
                return None
        else:
            return word if word in COMMANDS_FROM or word in ("chat", "doctor", "serve") \
                else None
    return None


def _add_own_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    chat = sub.add_parser("chat", help="chat in the terminal (pipe mode when stdin is not a tty)")
    chat.add_argument("--pipe", action="store_true",
                      help="one message per input line, one reply per line on stdout")
    chat.add_argument("--jsonl", action="store_true",
                      help="pipe mode, each reply as a JSON line (reply, stop_reason, approvals)")
    doctor = sub.add_parser("doctor", help="check every configured part: the database, the "
                            "LLM, Telegram, Twilio, the public URL, the secrets, each capability")
    doctor.add_argument("--fix", action="store_true",
                        help="also do what is safe to do: create the data directory, apply "
                             "migrations, register the Telegram webhook and command menu")
    serve = sub.add_parser("serve", help="run the service: channels (Telegram, SMS), webhooks, "
                                         "health checks, metrics")
    from bot.app.roles import ALL, ROLES

    serve.add_argument("--role", choices=ROLES, action="append", metavar="ROLE",
                       help=f"which parts this process runs: {', '.join(ROLES)} (default "
                            f"{ALL}, the only one on SQLite; repeatable: --role web --role "
                            "scheduler)")


def _everywhere(p: argparse.ArgumentParser) -> None:
    """Every command accepts the global options too (`valet chat --config x.yaml`), and its
    help page opens with the line its parent lists it with."""
    for action in p._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        helps = {a.dest: a.help for a in action._choices_actions}
        for name, child in action.choices.items():
            child.description = child.description or helps.get(name)
            # SUPPRESS: an option given before the command is not reset by the child's default
            child.add_argument("--config", default=argparse.SUPPRESS, help=CONFIG_HELP)
            child.add_argument("--env-file", default=argparse.SUPPRESS, help=ENV_FILE_HELP)
            _everywhere(child)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    p = parser(argv)
    args = p.parse_args(argv)
    if args.command is None:
        p.print_help()
        return 0
    try:
        load_env(args)  # valet.env: what `valet onboard` wrote (the environment wins)
        load_secret_files(os.environ)  # VALET_X_FILE (Docker secrets, systemd credentials)
        # onboard writes the file: one asked for that does not exist yet is where it goes
        settings = load_channel_settings(args.config, missing_ok=args.command == "onboard")
    except (ConfigError, EnvFileError) as err:
        return _stop(err)
    if settings.source != "<defaults>":  # a deployment's own agent and tool modules
        here = str(settings.config_dir().resolve())
        if here not in sys.path:
            sys.path.append(here)  # after everything installed: it never shadows a package
    commands: dict[str, Callable[[Settings, argparse.Namespace], Coroutine[Any, Any, int]]] = {
        "chat": _chat, "doctor": _doctor, "serve": _serve, "users": _admin,
        "pair": _admin, "approvals": _admin, "tasks": _tasks,
        "connect": _connect, "credentials": _connect, "memory": _memory, "mcp": _mcp,
        "turns": _turns, "console-link": _console_link, "migrate": _ops, "backup": _ops,
        "logs": _ops, "onboard": _onboard, "outbox": _outbox, "service": _service,
        "budget": _budget}
    _configure_logging(settings, args.command, getattr(args, "role", None))
    install_redaction()  # every library's log lines too: URL credentials never reach a log
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


def load_env(args: argparse.Namespace) -> Path:
    """The env file into this process's environment, before anything reads it; its path."""
    given = getattr(args, "env_file", None)
    path = Path(given) if given else default_env_file(config_path(args.config, dict(
        os.environ))[0])
    load_env_file(path, os.environ, required=bool(given))
    return path


def _configure_logging(settings: Settings, command: str,
                       roles: list[str] | None = None) -> None:
    """The chat shows no raw log lines: they go to the log file (its path: `valet doctor`),
    and the few worth telling the person become short notes (channels.console.tty). The
    doctor's neither: it says what it found in its own lines, the log goes to the file.
    `valet serve` writes to stderr (the journal, the container's log) and, when it is the
    whole deployment (every role), to the log file (`valet logs`); a process of some roles
    writes to stderr only: several of them share a data directory, and one file rotated by
    several processes is no log at all. Every other command writes to stderr. `log_format:
    json` for both."""
    from bot.app.roles import Roles
    from bot.plumbing.logs import add_handler, file_handler, formatter

    handlers: list[logging.Handler] = []
    quiet = command in ("chat", "doctor")  # their own words on screen, no log lines
    owns_the_file = quiet or (command == "serve" and Roles.of(roles).everything)
    if owns_the_file:
        to_file = file_handler(settings.log_file(), settings.log_format)
        if to_file is not None:
            handlers.append(to_file)
    if not quiet or not handlers:
        # (A chat whose data directory is unusable: the database, which lives there too,
        # stops start-up next with one clear line; until then the log goes to stderr.)
        to_stderr = logging.StreamHandler(sys.stderr)
        to_stderr.setFormatter(formatter(settings.log_format))
        handlers.append(to_stderr)
    for handler in handlers:
        add_handler(handler, settings.log_level)


def _stop(err: Exception) -> int:
    """An operator's problem, one line each, and the exit status that says so."""
    for line in str(err).splitlines() or [type(err).__name__]:
        print(f"valet: {redact_text(line)}", file=sys.stderr)
    return EXIT_CONFIG


async def _chat(settings: Settings, args: argparse.Namespace) -> int:
    from bot.cli.chat import run_chat

    return await run_chat(settings, pipe=args.pipe or args.jsonl or not sys.stdin.isatty(),
                          jsonl=args.jsonl)


async def _admin(settings: Settings, args: argparse.Namespace) -> int:
    from bot.cli.admin import run_admin

    return await run_admin(settings, args)


async def _tasks(settings: Settings, args: argparse.Namespace) -> int:
    from bot.cli.tasks import run_tasks

    return await run_tasks(settings, args)


async def _connect(settings: Settings, args: argparse.Namespace) -> int:
    from bot.cli.connect import run_connect

    return await run_connect(settings, args)


async def _memory(settings: Settings, args: argparse.Namespace) -> int:
    from bot.cli.memory import run_memory

    return await run_memory(settings, args)


async def _turns(settings: Settings, args: argparse.Namespace) -> int:
    from bot.cli.turns import run_turns

    return await run_turns(settings, args)


async def _mcp(settings: Settings, args: argparse.Namespace) -> int:
    from bot.cli.mcp import run_mcp

    return await run_mcp(settings, args)


async def _outbox(settings: Settings, args: argparse.Namespace) -> int:
    from bot.cli.outbox import run_outbox

    return await run_outbox(settings, args)


async def _budget(settings: Settings, args: argparse.Namespace) -> int:
    from bot.cli.budget import run_budget

    return await run_budget(settings, args)


async def _onboard(settings: Settings, args: argparse.Namespace) -> int:
    from bot.cli.onboard import run_onboard

    return await run_onboard(settings, args)


async def _console_link(settings: Settings, args: argparse.Namespace) -> int:
    from bot.cli.console_link import run_console_link

    return await run_console_link(settings, args)


async def _service(settings: Settings, args: argparse.Namespace) -> int:
    from bot.cli.service import run_service

    return await run_service(settings, args)


async def _serve(settings: Settings, args: argparse.Namespace) -> int:
    from bot.app.serve import serve

    return await serve(settings, role=args.role)


async def _ops(settings: Settings, args: argparse.Namespace) -> int:
    from bot.cli.ops import run_backup, run_logs, run_migrate

    run = {"migrate": run_migrate, "backup": run_backup, "logs": run_logs}[args.command]
    return await run(settings, args)


async def _doctor(settings: Settings, args: argparse.Namespace) -> int:
    from bot.cli.doctor import run_doctor

    return await run_doctor(settings, print, fix=args.fix)
