"""Every `valet` command: `main` parses the command line and runs one (`python -m bot` too).

The collector is paused before the commands' modules are imported (bot.plumbing.startup), so
this package imports them only when `main` runs."""

from __future__ import annotations

from typing import Any

from bot.plumbing.startup import pause_collector, started

__all__ = ["main", "parser"]


def main(argv: list[str] | None = None) -> int:
    pause_collector()
    try:
        from bot.cli.main import main as run

        return run(argv)
    finally:
        started()  # a command that ended before its parts started (or never had any)


def __getattr__(name: str) -> Any:
    if name == "parser":
        from bot.cli.main import parser

        return parser
    raise AttributeError(f"module 'bot.cli' has no attribute {name!r}")
