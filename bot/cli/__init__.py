"""Every `valet` command: `main` parses the command line and runs one (`python -m bot` too).

The collector is paused before the commands' modules are imported (bot.plumbing.startup), so
this package imports them only when `main` runs."""

from __future__ import annotations

from bot.plumbing.startup import pause_collector, started

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    pause_collector()
    try:
        from bot.cli.main import main as run

        return run(argv)
    finally:
        started()  # a command that ended before its parts started (or never had any)
