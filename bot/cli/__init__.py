"""Every `valet` command: `main` parses the command line and runs one (`python -m bot` too)."""

from bot.cli.main import main, parser

__all__ = ["main", "parser"]
